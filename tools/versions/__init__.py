"""`make versions`: every version the product pins, beside the newest its registry lists."""

"""One environment's stacks: their names and order, and what a deployed stack reports (its
outputs, read with CloudFormation for what runs without CDK)."""

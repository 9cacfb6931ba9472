"""The deploy-time model of the stacks (``make deploy-plan``, ``make deploy-durations``)."""

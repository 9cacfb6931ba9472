"""CDK helpers every stack and construct shares: the App and its context, cross-stack waits,
cdk-nag, removal policies, tags, the template validator, the token guard for written output and
the record of what the product wrote (never written over what it did not)."""

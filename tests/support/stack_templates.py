"""The small CloudFormation templates the teardown world deploys into moto: one resource, a bucket
with its access-log bucket, and a Lambda function with a retained log group."""

from __future__ import annotations

import json

TEMPLATE = json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}})
# Like infra/constructs/buckets.py SecureBucket: a bucket and its server-access-log bucket.
BUCKETS_TEMPLATE = json.dumps(
    {
        "Resources": {
            "Bucket": {"Type": "AWS::S3::Bucket"},
            "AccessLogs": {"Type": "AWS::S3::Bucket"},
        }
    }
)


def function_template(role_arn: str) -> str:
    """A stack with a Lambda function (its log group appears outside CloudFormation) and a
    retained log group (CloudFormation leaves it behind), like the CDK provider stacks."""
    return json.dumps(
        {
            "Resources": {
                "Fn": {
                    "Type": "AWS::Lambda::Function",
                    "Properties": {
                        "Runtime": "python3.12",
                        "Handler": "index.handler",
                        "Role": role_arn,
                        "Code": {"ZipFile": "def handler(event, context): pass"},
                    },
                },
                "Logs": {
                    "Type": "AWS::Logs::LogGroup",
                    "DeletionPolicy": "Retain",
                    "UpdateReplacePolicy": "Retain",
                },
            }
        }
    )

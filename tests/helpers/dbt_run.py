"""Running dbt in-process against the example project."""

import os

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(REPO, "integration_tests")


class Events:
    """dbt event messages of one invocation, to check what a user would read in the log."""

    def __init__(self):
        self.messages = []

    def __call__(self, event):
        self.messages.append(event.info.msg)

    def matching(self, text):
        return [m for m in self.messages if text in m]


def run_dbt(args, events=None):
    from dbt.cli.main import dbtRunner

    result = dbtRunner(callbacks=[events] if events else []).invoke(args)
    return result

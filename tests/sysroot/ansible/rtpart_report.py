"""A stdout callback for tests/sysroot/ansible_playbook.py: the play's report as one JSON
document on stdout, in the layout of the ansible.posix collection's json callback (plays → tasks →
hosts → result; stats by host), with nothing but ansible-core's own plugin API, which Debian's
ansible-core package has (it ships no json callback: that one is in the ansible package's
collections)."""
import json

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: rtpart_report
    type: stdout
    short_description: the play's report as one JSON document
    description: the layout of ansible.posix.json, for rtpart's playbook test
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "rtpart_report"

    def __init__(self):
        super().__init__()
        self.plays = []

    def v2_playbook_on_play_start(self, play):
        self.plays.append({"play": {"name": play.get_name()}, "tasks": []})

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.plays[-1]["tasks"].append({"task": {"name": task.get_name()}, "hosts": {}})

    def _result(self, result, **extra):
        r = dict(result._result)
        r.update(extra)
        self.plays[-1]["tasks"][-1]["hosts"][result._host.get_name()] = r

    def v2_runner_on_ok(self, result, **kwargs):
        self._result(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result(result, failed=True)

    def v2_runner_on_skipped(self, result):
        self._result(result, skipped=True)

    def v2_runner_on_unreachable(self, result):
        self._result(result, unreachable=True)

    def v2_playbook_on_stats(self, stats):
        hosts = sorted(stats.processed.keys())
        summary = {h: stats.summarize(h) for h in hosts}
        self._display.display(json.dumps({"plays": self.plays, "stats": summary}, indent=1, default=str))

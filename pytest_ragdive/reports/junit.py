"""ragdive-junit.xml: one test case per gated metric per suite."""

from __future__ import annotations

from ..gate.outcome import RunOutcome


def junit_xml(outcome: RunOutcome) -> str:
    from junit_xml import TestCase, TestSuite, to_xml_report_string

    rows = outcome.gate or []
    suites = []
    for suite in outcome.suites:
        cases = []
        for r in (r for r in rows if r.suite == suite):
            tc = TestCase(name=r.metric, classname=f"ragdive.{suite}")
            if r.failed:
                tc.add_failure_info(message=r.line(), output=r.line())
            else:
                tc.stdout = r.line()
            cases.append(tc)
        suites.append(TestSuite(f"ragdive-{suite}", cases))
    return to_xml_report_string(suites)

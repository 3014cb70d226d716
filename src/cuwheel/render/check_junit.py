"""Check reports as JUnit XML (docs/checks.md): one test suite per wheel, one test case per
check x library (and the wheel itself), failing when a finding at or above the policy's
``fail_on`` is not waived."""

from __future__ import annotations

from collections.abc import Sequence

from cuwheel._urls import code_url
from cuwheel.checks.findings import Unreadable, WheelReport
from cuwheel.render.check_names import WHEEL
from cuwheel.render.escape import xml_attr, xml_text

__all__ = ["to_junit"]


def to_junit(reports: Sequence[WheelReport], unreadable: Sequence[Unreadable] = ()) -> str:
    """One suite per wheel; an input that could not be read is a suite of one erroring
    test case (JUnit's ``error``: the test could not run, not a finding)."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>']
    total = sum(len(r.checks) * (len(r.libraries) + 1) for r in reports) + len(unreadable)
    fails = 0
    suites: list[str] = []
    for r in reports:
        cases: list[str] = []
        failed_here = 0
        for check in r.checks:
            for lib in (*r.libraries, WHEEL):
                found = [f for f in r.findings if f.check == check and (f.library or WHEEL) == lib]
                failing = [f for f in found if f in r.failing]
                name = xml_attr(f"{check}: {lib}")
                cls = xml_attr(f"cuwheel.check.{check}")
                body = ""
                if failing:
                    failed_here += 1
                    text = "\n".join(
                        xml_text(f"{f.code} {f.severity}: {f.message} (docs: {code_url(f.code)})")
                        for f in failing
                    )
                    body += (
                        f"<failure type={xml_attr(failing[0].code)} "
                        f"message={xml_attr(failing[0].message)}>{text}</failure>"
                    )
                rest = [f for f in found if f not in failing]
                if rest:
                    text = "\n".join(
                        xml_text(
                            f"{f.code} {f.severity}: {f.message}"
                            + (f" [waived: {f.waived}]" if f.waived else "")
                        )
                        for f in rest
                    )
                    body += f"<system-out>{text}</system-out>"
                if body:
                    cases.append(f"    <testcase classname={cls} name={name}>{body}</testcase>")
                else:
                    cases.append(f"    <testcase classname={cls} name={name}/>")
        fails += failed_here
        suites.append(
            f'  <testsuite name={xml_attr(r.wheel)} tests="{len(cases)}" '
            f'failures="{failed_here}" errors="0">'
        )
        suites += cases
        suites.append("  </testsuite>")
    for u in unreadable:
        suites.append(f'  <testsuite name={xml_attr(u.input)} tests="1" failures="0" errors="1">')
        suites.append(f'    <testcase classname="cuwheel.check.inputs" name={xml_attr(u.input)}>'
                      f'<error type="unreadable" message={xml_attr(u.error)}>'
                      f'{xml_text(u.error)}</error></testcase>')
        suites.append("  </testsuite>")
    errors = f' errors="{len(unreadable)}"' if unreadable else ""
    out.append(f'<testsuites name="cuwheel check" tests="{total}" failures="{fails}"{errors}>')
    out += suites
    out.append("</testsuites>")
    return "\n".join(out) + "\n"

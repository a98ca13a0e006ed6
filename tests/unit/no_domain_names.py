#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The engine, the daemon and profile loading never name a domain: what differs between domains is
asked of the backend table (lib/backends/backend.c's backends[]). Fails listing every line of
lib/engine/ or daemon/ that names a DOMAIN_ constant (the table's size, _DOMAIN_MAX, is not a
domain), and every line of lib/profile/ that names a backend's profile section.

The layers below the backends do not reach up to them either: lib/profile/ includes neither
backend.h nor plan.h (backends register their sections with the schema, backend_profile_schema()),
and lib/journal/ includes neither backend.h nor plan.h (the knob types are lib/knob/knob.h's)."""
import os
import re
import sys

src = os.environ.get("RTPART_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")


def sources(*parts):
    """Every C file below src/parts..., sorted."""
    top = os.path.join(src, *parts)
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs if f.endswith((".c", ".h")))


files = sources("lib", "engine") + sources("daemon")
name = re.compile(r"(?<![A-Za-z0-9_])DOMAIN_[A-Z]")
found = []
for f in files:
    with open(f, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if name.search(line):
                found.append(f"{os.path.relpath(f, src)}:{n}: {line.strip()}")
# Nor does profile loading and resolution name a domain's section: its schema and its checks
# (Backend.schema, Backend.check) live in the backend that owns it.
sections = set()
for f in sources("lib", "backends"):
    with open(f, encoding="utf-8") as fh:
        sections.update(re.findall(r'SchemaField \w+_section = \{ "([a-z_]+)"', fh.read()))
profile_files = [f for f in sources("lib", "profile") if f.endswith(".c")]
literal = re.compile(r'"(%s)"' % "|".join(sorted(sections))) if sections else None
for f in profile_files:
    with open(f, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if literal and literal.search(line):
                found.append(f"{os.path.relpath(f, src)}:{n}: {line.strip()}")
if not sections:
    found.append("no backend declares a section (SchemaField NAME_section = { \"key\", … })")

# The arrows that must never be: a layer below the backends including their headers.
never = {("lib", "profile"): ("backend.h", "plan.h"), ("lib", "journal"): ("backend.h", "plan.h")}
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
layered = []
for parts, banned in never.items():
    for f in sources(*parts):
        layered.append(f)
        with open(f, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                m = include.match(line)
                if m and m.group(1) in banned:
                    found.append(f"{os.path.relpath(f, src)}:{n}: {line.strip()} ({'/'.join(parts)} is below the "
                                 "backends)")
if not layered:
    found.append("no file in lib/profile or lib/journal: the layers moved, and this check with them")
if found:
    print("These name a domain or reach up to the backends; ask the backend table instead (lib/backends/backend.h: "
          "schema, check, flags, watch, heading, refusal_reason; backend_profile_schema()):", file=sys.stderr)
    print("\n".join(found), file=sys.stderr)
    sys.exit(1)
print(f"{len(files) + len(profile_files) + len(layered)} files, no domain named ({len(sections)} sections), "
      "no layer below the backends includes them")

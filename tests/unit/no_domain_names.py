#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The engine and the daemon never name a domain: what differs between domains is asked of the
backend table (lib/plan.c's backends[]). Fails listing every line of lib/engine.c or daemon/ that
names a DOMAIN_ constant (the table's size, _DOMAIN_MAX, is not a domain)."""
import os
import re
import sys

src = os.environ.get("RTPART_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
files = [os.path.join(src, "lib", "engine.c"), os.path.join(src, "lib", "engine.h")]
daemon = os.path.join(src, "daemon")
files += sorted(os.path.join(daemon, f) for f in os.listdir(daemon) if f.endswith((".c", ".h")))
name = re.compile(r"(?<![A-Za-z0-9_])DOMAIN_[A-Z]")
found = []
for f in files:
    with open(f, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if name.search(line):
                found.append(f"{os.path.relpath(f, src)}:{n}: {line.strip()}")
if found:
    print("These name a domain; ask its backend instead (lib/backend.h: flags, watch, heading, "
          "refusal_reason):", file=sys.stderr)
    print("\n".join(found), file=sys.stderr)
    sys.exit(1)
print(f"{len(files)} files, no domain named")

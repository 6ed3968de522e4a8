"""Suite-wide isolation: no test reads or writes the user's own catalog folder.

``models add`` writes to a user folder (``INFER_ADVISOR_HOME``, else the XDG data dir) that the catalog loader
reads beside the shipped one; a developer's own entries there must not change what the tests see, and no test may
leave entries behind. Subprocesses (the CLI run as a user runs it) inherit the variable.
"""

from __future__ import annotations

import os
import shutil
import tempfile


def pytest_configure(config):
    home = tempfile.mkdtemp(prefix="infer-advisor-home-")
    config._infer_advisor_home = home
    os.environ["INFER_ADVISOR_HOME"] = home


def pytest_unconfigure(config):
    home = getattr(config, "_infer_advisor_home", None)
    if home:
        shutil.rmtree(home, ignore_errors=True)

"""The Nodus documents' name for the agentrun client: `import nodus` is `import agentrun`, so the
Nodus examples run unchanged against an agentrun server."""

from agentrun import *  # noqa: F401,F403
from agentrun import __all__, __version__  # noqa: F401

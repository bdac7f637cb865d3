"""The app the crash loop runs in a subprocess (`python -m uvicorn tests.recovery.crash_app:app`).

With `THINK_TEST_KILL_FILE` set, the process kills itself inside a flush of the resumable chunk
buffer once that file exists: the file holds how many more flushes to let through; the chosen one
SIGKILLs the process from SQLite's progress handler a few virtual-machine steps into its INSERT
(or, for a statement shorter than that, the moment it returns): a kill aimed at the buffer's write.
"""

import os
import random
import signal
from pathlib import Path

from tests.recovery.crash_agents import Asker, Boss, Crashy, Jobs
from think.server import create_app
from think.stream.resumable import LiveStream, ResumableStreams

app = create_app([Crashy, Boss, Jobs, Asker], data_dir=os.environ["THINK_DATA_DIR"], idle_timeout=60)


def _die() -> int:
    os.kill(os.getpid(), signal.SIGKILL)
    return 1


if kill_file := os.environ.get("THINK_TEST_KILL_FILE"):
    armed = Path(kill_file)
    real_flush = ResumableStreams._flush

    def flush(self: ResumableStreams, live: LiveStream) -> None:
        if live.pending and armed.exists():
            left = int(armed.read_text() or "1") - 1
            if left <= 0:
                armed.unlink()
                self.db._conn.set_progress_handler(_die, random.randint(1, 40))
                real_flush(self, live)
                _die()
            armed.write_text(str(left))
        real_flush(self, live)

    ResumableStreams._flush = flush  # type: ignore[method-assign]

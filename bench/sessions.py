"""Session storage at scale: appends, full-text search, loading, and size on disk.

    python bench/sessions.py [--messages 100000] [--queries 300]

Prints:
* append cost per message (one write transaction each, as a turn does) with 10 messages in the
  session and with `--messages` in it (target: flat, ≤ 1.2× growth);
* FTS query time over `--messages` messages (target: median ≤ 20 ms);
* time to load a 10,000-message transcript into a fresh session object;
* database size per 10,000 messages of typical chat (target: ≤ 2× the raw text).

"Typical chat" is English prose from Python's own documentation cut into messages the size
public chat logs show: users 5-100 words, assistant replies 40-300 words.
Figures, not assertions: compare ratios from one run (the machines are shared and noisy).
"""

from __future__ import annotations

import argparse
import pydoc_data.topics
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from think.messages import Message, StepStartPart, TextPart
from think.sessions import MIGRATIONS, Session, Sessions
from think.storage import Database, migrate
from think.stream.fanout import Fanout

CORPUS = re.findall(r"[A-Za-z][A-Za-z'\-]*[.,;:?!]?", " ".join(pydoc_data.topics.topics.values()))
VOCABULARY = sorted({w.strip(".,;:?!").lower() for w in CORPUS if len(w) > 5})


def chat(rng: random.Random, count: int, start: int = 0) -> Iterator[tuple[Message, int]]:
    """Alternating user and assistant messages, with the size of their text."""
    for i in range(start, start + count):
        words = rng.randint(5, 100) if i % 2 == 0 else rng.randint(40, 300)
        at = rng.randrange(len(CORPUS) - words)
        text = " ".join(CORPUS[at:at + words])
        if i % 2 == 0:
            message = Message(id=f"u{i}-{rng.getrandbits(40):x}", role="user", parts=[TextPart(text=text)])
        else:
            message = Message(id=f"a{i}-{rng.getrandbits(64):x}", role="assistant",
                              parts=[StepStartPart(), TextPart(text=text, state="done")])
        yield message, len(text.encode())


def open_db(path: Path) -> Database:
    db = Database(path)
    migrate(db, MIGRATIONS)
    return db


def fill(session: Session, rng: random.Random, count: int, *, batch: int = 1000) -> int:
    raw = 0
    for start in range(0, count, batch):
        messages = list(chat(rng, min(batch, count - start), start))
        raw += sum(size for _, size in messages)
        session.add_messages([m for m, _ in messages])
    return raw


def timed_appends(session: Session, rng: random.Random, count: int, start: int) -> list[float]:
    times = []
    for message, _ in chat(rng, count, start):
        t0 = time.perf_counter()
        session.add_messages([message])
        times.append((time.perf_counter() - t0) * 1e6)
    return times


def summary(times: list[float], unit: str = "µs") -> str:
    p90 = statistics.quantiles(times, n=10)[8]
    median, mean = statistics.median(times), statistics.mean(times)
    return f"median {median:7.1f} {unit}   mean {mean:7.1f} {unit}   p90 {p90:7.1f} {unit}"


def main(total: int, queries: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="think-sessions-bench-"))
    rng = random.Random(7)
    print(f"think sessions — python {sys.version.split()[0]}, data in {root}")

    # 1. Append cost: sessions of 10 messages vs one session of `total` messages.
    small = Sessions(open_db(root / "small.db"), fanout=Fanout())
    at_ten: list[float] = []
    for _ in range(200):
        session = small.create()
        fill(session, rng, 10)
        at_ten += timed_appends(session, rng, 5, 10)
    big_db = open_db(root / "big.db")
    big = Session(big_db)
    t0 = time.perf_counter()
    fill(big, rng, total)
    filled = time.perf_counter() - t0
    at_total = timed_appends(big, rng, 2000, total)
    print("\nappend one message (its own transaction; search indexing amortized in batches):")
    print(f"  at 10 messages       {summary(at_ten)}")
    print(f"  at {total:,} messages {summary(at_total)}")
    growth = statistics.median(at_total) / statistics.median(at_ten)
    mean_growth = statistics.mean(at_total) / statistics.mean(at_ten)
    print(f"  growth (median)      {growth:.2f}x  (target ≤ 1.2x);   mean {mean_growth:.2f}x")
    print(f"  (filling {total:,} messages in batches of 1,000 took {filled:.1f} s)")

    # 2. Full-text search over every message.
    big.search("warmup")
    words = rng.sample(VOCABULARY, queries)
    single = []
    for word in words:
        t0 = time.perf_counter()
        big.search(word)
        single.append((time.perf_counter() - t0) * 1000)
    double = []
    for a, b in zip(words, reversed(words), strict=True):
        t0 = time.perf_counter()
        big.search(f"{a} {b}")
        double.append((time.perf_counter() - t0) * 1000)
    common = []
    for word in ["function", "object", "value", "the", "return"]:
        t0 = time.perf_counter()
        hits = big.search(word)
        common.append((time.perf_counter() - t0) * 1000)
        assert hits, word
    print(f"\nFTS search over {big.count_rows():,} messages (top 10, ranked, with snippets):")
    print(f"  one word             {summary(single, 'ms')}  (target median ≤ 20 ms)")
    print(f"  two words            {summary(double, 'ms')}")
    print(f"  very common words    max {max(common):.1f} ms ('the', 'value', 'function', …)")

    # 3. Loading a 10,000-message transcript.
    sessions = Sessions(big_db, fanout=Fanout())
    ten_k = sessions.create("ten-k")
    fill(ten_k, rng, 10_000)
    loads = []
    for _ in range(5):
        t0 = time.perf_counter()
        loaded = Session(big_db, ten_k.id).history()
        loads.append((time.perf_counter() - t0) * 1000)
        assert len(loaded) == 10_000
    print("\nhistory load, 10,000 messages into a fresh session object (decoded and validated):")
    load = statistics.median(loads)
    print(f"  median {load:.0f} ms   ({load * 1000 / 10_000:.0f} µs per message)")

    # 4. Size on disk per 10,000 messages.
    sized = open_db(root / "size.db")
    raw = fill(Session(sized), random.Random(11), 10_000, batch=100)
    sized.sql("PRAGMA wal_checkpoint(TRUNCATE)")
    json_bytes = int(sized.value("SELECT sum(length(body)) FROM think_messages"))
    pages = int(sized.value("PRAGMA page_count")) - int(sized.value("PRAGMA freelist_count"))
    size = pages * int(sized.value("PRAGMA page_size"))
    print("\ndatabase size, 10,000 messages of typical chat:")
    print(f"  raw text {raw / 1e6:.2f} MB ({raw / 10_000:.0f} bytes a message), as JSON {json_bytes / 1e6:.2f} MB")
    print(f"  database {size / 1e6:.2f} MB → {size / raw:.2f}x the raw text (target ≤ 2x), "
          f"{size / json_bytes:.2f}x the JSON")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    main(args.messages, args.queries)

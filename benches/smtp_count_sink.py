#!/usr/bin/env python3
"""A counting SMTP sink for the benchmarks: a minimal SMTP test peer (not a mail server).

postfix's smtp-sink accepts mail as fast as anything but counts nothing, and a benchmark that
claims "every accepted message was delivered, none twice" has to count. This peer accepts every
transaction (PIPELINING, 8BITMIME, SMTPUTF8; no STARTTLS, no AUTH, no relay checks), reads each
message's Message-ID header and counts one delivery per (Message-ID, recipient) pair, because a
node may deliver one message to several recipients of a domain in one transaction. The same pair
arriving again is a duplicate.

Counts are kept per tag, the recipient's local part up to its first '-' (the benchmarks name
their runs that way: a-..., c-n2-...), so that one sink serves every run of a script and a late
delivery of one run never counts for the next. A tiny HTTP status port answers:
  GET /          every tag, one line each: "TAG received=N distinct=N duplicates=N messages=N
                 transactions=N no_message_id=N"
  GET /TAG       the same line for one tag (all zero for a tag not seen yet)
  GET /TAG/duplicates  the pairs of that tag received more than once: "N Message-ID recipient"
At exit (SIGTERM, SIGINT) the same lines go to --report when given.

  python3 benches/smtp_count_sink.py --port 2597 --status 2598 [--report FILE]

Everything listens on 127.0.0.1 only.
"""

import argparse
import asyncio
import re
import signal

# One message may be large (attachments); a line is at most 998 bytes by RFC 5322, but a peer
# under test may break that, and a whole DATA is read in one piece.
LIMIT = 64 * 1024 * 1024
MESSAGE_ID = re.compile(rb"^message-id:[ \t]*(.*)$", re.IGNORECASE)
TAG_FIELDS = ("received", "distinct", "duplicates", "messages", "transactions", "no_message_id")


class Tally:
    """What one tag received."""

    def __init__(self):
        self.pairs = set()
        self.repeated = {}
        self.ids = set()
        self.received = 0
        self.duplicates = 0
        self.transactions = 0
        self.no_message_id = 0

    def line(self, tag):
        values = (
            self.received,
            len(self.pairs),
            self.duplicates,
            len(self.ids),
            self.transactions,
            self.no_message_id,
        )
        return tag + " " + " ".join(f"{k}={v}" for k, v in zip(TAG_FIELDS, values))


TALLIES = {}


def tally(tag):
    if tag not in TALLIES:
        TALLIES[tag] = Tally()
    return TALLIES[tag]


def message_id(data):
    """The Message-ID of a message's header (folded lines joined), or None."""
    head = data.split(b"\r\n\r\n", 1)[0]
    unfolded = re.sub(rb"\r\n[ \t]+", b" ", head)
    for line in unfolded.split(b"\r\n"):
        m = MESSAGE_ID.match(line)
        if m:
            return m.group(1).strip().decode("utf-8", "replace")
    return None


def record(recipients, data):
    mid = message_id(data)
    seen_tags = set()
    for rcpt in recipients:
        tag = rcpt.split("@", 1)[0].split("-", 1)[0]
        t = tally(tag)
        if tag not in seen_tags:
            t.transactions += 1
            seen_tags.add(tag)
        t.received += 1
        if mid is None:
            t.no_message_id += 1
            continue
        t.ids.add(mid)
        pair = (mid, rcpt.lower())
        if pair in t.pairs:
            t.duplicates += 1
            t.repeated[pair] = t.repeated.get(pair, 1) + 1
        else:
            t.pairs.add(pair)


def address(arg):
    """The address inside <...> of a MAIL FROM or RCPT TO argument."""
    m = re.search(r"<([^>]*)>", arg)
    return m.group(1) if m else arg.split()[0] if arg.split() else ""


async def smtp(reader, writer):
    recipients, sender = [], None
    writer.write(b"220 sink.bench.test ESMTP count sink\r\n")
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            text = line.decode("utf-8", "replace").rstrip("\r\n")
            verb = text[:4].upper()
            if verb in ("EHLO", "LHLO"):
                writer.write(
                    b"250-sink.bench.test\r\n250-PIPELINING\r\n250-8BITMIME\r\n"
                    b"250-SMTPUTF8\r\n250-ENHANCEDSTATUSCODES\r\n250 SIZE 67108864\r\n"
                )
            elif verb == "HELO":
                writer.write(b"250 sink.bench.test\r\n")
            elif text[:10].upper() == "MAIL FROM:":
                sender, recipients = address(text[10:]), []
                writer.write(b"250 2.1.0 ok\r\n")
            elif text[:8].upper() == "RCPT TO:":
                if sender is None:
                    writer.write(b"503 5.5.1 MAIL first\r\n")
                else:
                    recipients.append(address(text[8:]))
                    writer.write(b"250 2.1.5 ok\r\n")
            elif verb == "DATA":
                if not recipients:
                    writer.write(b"503 5.5.1 RCPT first\r\n")
                    continue
                writer.write(b"354 end with .\r\n")
                await writer.drain()
                data = await reader.readuntil(b"\r\n.\r\n")
                record(recipients, data)
                sender, recipients = None, []
                writer.write(b"250 2.0.0 ok\r\n")
            elif verb == "RSET":
                sender, recipients = None, []
                writer.write(b"250 2.0.0 ok\r\n")
            elif verb == "NOOP":
                writer.write(b"250 2.0.0 ok\r\n")
            elif verb == "QUIT":
                writer.write(b"221 2.0.0 bye\r\n")
                await writer.drain()
                break
            else:
                writer.write(b"502 5.5.2 not implemented\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        pass
    finally:
        writer.close()


def report(path_tag=None):
    if path_tag and path_tag.endswith("/duplicates"):
        t = TALLIES.get(path_tag.rsplit("/", 1)[0], Tally())
        return "".join(f"{n} {mid} {rcpt}\n" for (mid, rcpt), n in sorted(t.repeated.items()))
    if path_tag:
        return TALLIES.get(path_tag, Tally()).line(path_tag) + "\n"
    return "".join(TALLIES[t].line(t) + "\n" for t in sorted(TALLIES))


async def status(reader, writer):
    try:
        request = await reader.readline()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass
        parts = request.decode("ascii", "replace").split()
        path = parts[1] if len(parts) > 1 else "/"
        body = report(path.strip("/")).encode()
        writer.write(
            b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
            % len(body)
            + body
        )
        await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True, help="SMTP port on 127.0.0.1")
    ap.add_argument("--status", type=int, required=True, help="HTTP status port on 127.0.0.1")
    ap.add_argument("--report", help="file the counts are written to at exit")
    args = ap.parse_args()
    mail = await asyncio.start_server(smtp, "127.0.0.1", args.port, limit=LIMIT, backlog=1000)
    stat = await asyncio.start_server(status, "127.0.0.1", args.status)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with mail, stat:
        await stop.wait()
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            f.write(report())


if __name__ == "__main__":
    asyncio.run(main())

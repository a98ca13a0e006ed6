"""The clients of the load test (tests/sysroot/load.py), for one uid: run as that uid
(`python3 -c SOURCE CONFIG`), since rtpartd and the bus know a peer by the uid of its socket.

CONFIG is JSON: {"transport": "varlink"|"dbus", "address": socket path, "uid": N, "seed": N,
"cycles": N, "max_conns": N or 0, "actors": {KIND: COUNT}}. The process prints {"ready": true},
starts every actor on "go", prints {"behaved_done": true} once every well-behaved actor has
finished, and on "stop" closes every connection and prints its report:
{"uid", "actors": [{"kind", "behaved", "answers", "expected", "refused", "refused_uid",
"refused_all", "failures": [...], "connect_retries", "sent"}]}.

Well-behaved kinds (every call answered; a connection refused with TooManyConnections is tried
again after a short random back-off, as rtpartctl's users would):
  good        `cycles` times: connect, Verify, Status, Monitor (its first reply; D-Bus: AddMatch
              on the manager's signals and Get ActiveProfile), then a graceful close
              (shutdown(SHUT_WR), read to EOF).
  pipeliner   20 Status calls in one write (D-Bus: 4), then their replies, in order.
  halfclose   Verify, then shutdown(SHUT_WR) at once: the reply still comes, then EOF.
Hostile kinds (held until "stop"; refusals are what they deserve; they try up to 20 times):
  slow        Monitor (D-Bus: AddMatch on the manager's signals) and never read again.
  partial     half a message (D-Bus: half an AUTH line), never the rest.
  flood       calls written without reading a reply, as long as the socket takes them (D-Bus:
              2000 Verify calls).
  abort       `cycles` times: Verify, then close without reading.
  eofpartial  half a message, shutdown(SHUT_WR), never read.
  bloat       `cycles` times: 1 MiB of tiny JSON values in one call (D-Bus: Plan with a 900 KB
              profile name), its error read.
"""
import asyncio
import errno
import json
import os
import random
import socket
import struct
import sys
import time

IFACE = "org.rtpart.Manager"
TOO_MANY = IFACE + ".TooManyConnections"
BEHAVED = ("good", "pipeliner", "halfclose")
CALL_TIMEOUT = 120  # a hang detector: a well-behaved call not answered by then is a failure


class Refused(Exception):
    def __init__(self, message):
        super().__init__(message)
        self.message = message


class Closed(Exception):
    pass


class Conn:
    """A non-blocking unix stream socket read on demand (never behind the caller's back)."""

    def __init__(self, loop, sock):
        self.loop = loop
        self.sock = sock
        self.buf = b""

    @classmethod
    async def connect(cls, path):
        loop = asyncio.get_running_loop()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC)
        try:
            await loop.sock_connect(s, path)
        except BaseException:
            s.close()
            raise
        return cls(loop, s)

    async def send(self, data):
        try:
            await self.loop.sock_sendall(self.sock, data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # what the server said before it closed is still to be read

    async def fill(self):
        try:
            d = await self.loop.sock_recv(self.sock, 65536)
        except ConnectionResetError:
            d = b""
        if not d:
            raise Closed()
        self.buf += d

    async def until_eof(self):
        """Graceful close: our side shut down, then whatever comes until the server closes."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
            while True:
                await self.fill()
                self.buf = b""
        except (Closed, OSError):
            pass

    def close(self):
        self.sock.close()


# ---- varlink ----


class Varlink(Conn):
    async def call(self, method, parameters=None, more=False):
        await self.send(msg(method, parameters, more))
        return await self.reply()

    async def reply(self):
        while b"\0" not in self.buf:
            await self.fill()
        m, _, self.buf = self.buf.partition(b"\0")
        r = json.loads(m)
        if r.get("error") == TOO_MANY:
            raise Refused(r["parameters"]["message"])
        return r


def msg(method, parameters=None, more=False):
    m = {"method": method, "parameters": parameters or {}}
    if more:
        m["more"] = True
    return json.dumps(m).encode() + b"\0"


def check(r, method):
    if "error" in r or "parameters" not in r:
        raise AssertionError(f"{method}: {r}")
    return r["parameters"]


# ---- D-Bus: just enough of the wire protocol (little endian, EXTERNAL auth) ----


def pad(b, n):
    return b + b"\0" * (-len(b) % n)


def dbus_string(s, sig="s"):
    e = s.encode()
    if sig == "g":
        return bytes([len(e)]) + e + b"\0"
    return struct.pack("<I", len(e)) + e + b"\0"


def dbus_call(serial, dest, path, iface, member, sig="", body=b""):
    fields = b""
    for code, t, v in ((1, "o", path), (2, "s", iface), (3, "s", member), (6, "s", dest), (8, "g", sig)):
        if v is None or (code == 8 and not v):
            continue
        fields = pad(fields, 8) + bytes([code, 1]) + t.encode() + b"\0" + dbus_string(v, t)
    head = struct.pack("<cBBBIII", b"l", 1, 0, 1, len(body), serial, len(fields)) + fields
    return pad(head, 8) + body


def dbus_body_strings(*strings):
    b = b""
    for s in strings:
        b = pad(b, 4) + dbus_string(s)
    return b


class DBus(Conn):
    serial = 0

    async def auth(self, uid):
        await self.send(b"\0AUTH EXTERNAL " + str(uid).encode().hex().encode() + b"\r\n")
        while b"\r\n" not in self.buf:
            await self.fill()
        line, _, self.buf = self.buf.partition(b"\r\n")
        if not line.startswith(b"OK "):
            raise AssertionError(f"auth: {line!r}")
        await self.send(b"BEGIN\r\n")
        await self.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello")

    def next_serial(self):
        self.serial += 1
        return self.serial

    async def send_call(self, dest, path, iface, member, sig="", body=b""):
        s = self.next_serial()
        await self.send(dbus_call(s, dest, path, iface, member, sig, body))
        return s

    async def call(self, dest, path, iface, member, sig="", body=b""):
        s = await self.send_call(dest, path, iface, member, sig, body)
        while True:
            m = await self.message()
            if m["reply_serial"] == s:
                if m["type"] == 3:
                    raise AssertionError(f"{member}: error {m['error']}")
                return m

    async def message(self):
        """The next message: its type, reply serial, error name and (for an "s" body) string."""
        while True:
            if len(self.buf) >= 16:
                blen, _, flen = struct.unpack_from("<III", self.buf, 4)
                hlen = 16 + flen + (-(16 + flen) % 8)
                if len(self.buf) >= hlen + blen:
                    break
            await self.fill()
        mtype = self.buf[1]
        fields = self.buf[16:16 + flen]
        body = self.buf[hlen:hlen + blen]
        self.buf = self.buf[hlen + blen:]
        m = {"type": mtype, "reply_serial": None, "error": None, "body": body}
        i = 0
        while i < len(fields):
            i += -i % 8
            code = fields[i]
            slen = fields[i + 1]
            sig = fields[i + 2:i + 2 + slen].decode()
            i += 3 + slen
            if sig in ("s", "o"):
                i += -i % 4
                (n,) = struct.unpack_from("<I", fields, i)
                v = fields[i + 4:i + 4 + n].decode()
                i += 5 + n
            elif sig == "g":
                n = fields[i]
                v = fields[i + 1:i + 1 + n].decode()
                i += 2 + n
            elif sig == "u":
                i += -i % 4
                (v,) = struct.unpack_from("<I", fields, i)
                i += 4
            else:
                raise AssertionError(f"header field type {sig!r}")
            if code == 5:
                m["reply_serial"] = v
            elif code == 4:
                m["error"] = v
        return m


NAME, PATH = "org.rtpart.Manager1", "/org/rtpart/Manager1"
MATCH = "type='signal',sender='org.rtpart.Manager1',interface='org.rtpart.Manager1'"


def json_body(m):
    (n,) = struct.unpack_from("<I", m["body"], 0)
    return json.loads(m["body"][4:4 + n])


# ---- the actors ----


class Actor:
    def __init__(self, kind, worker, index):
        self.kind = kind
        self.w = worker
        self.behaved = kind in BEHAVED
        self.rng = random.Random(worker.seed * 100003 + index)
        self.answers = self.expected = 0
        self.refused = self.refused_uid = self.refused_all = 0
        self.connect_retries = 0
        self.sent = 0
        self.failures = []
        self.conns = []

    def report(self):
        return {k: getattr(self, k) for k in ("kind", "behaved", "answers", "expected", "refused", "refused_uid",
                                              "refused_all", "failures", "connect_retries", "sent")}

    def refusal(self, e):
        self.refused += 1
        if "per user" in e.message:
            self.refused_uid += 1
        else:
            self.refused_all += 1

    async def connect(self, auth=True):
        """A new connection, in one of the worker's slots (released when it is dropped)."""
        cls = Varlink if self.w.transport == "varlink" else DBus
        await self.w.slots.acquire()
        try:
            for _ in range(1000):
                try:
                    c = await cls.connect(self.w.address)
                    break
                except (BlockingIOError, ConnectionRefusedError, InterruptedError):
                    # The listen backlog is full: the kernel, not the daemon, said no; try again.
                    self.connect_retries += 1
                    await asyncio.sleep(0.01 + self.rng.random() * 0.05)
            else:
                raise AssertionError("could not connect 1000 times")
        except BaseException:
            self.w.slots.release()
            raise
        self.conns.append(c)
        if self.w.transport == "dbus" and auth:
            await c.auth(self.w.uid)
        return c

    def drop(self, c):
        if c in self.conns:
            self.conns.remove(c)
            c.close()
            self.w.slots.release()

    async def release(self, c, graceful=True):
        if graceful:
            await c.until_eof()
        self.drop(c)

    async def retrying(self, once, tries=None):
        """once() until it is not refused; a refused connection is closed, then a random back-off."""
        delay = 0.01
        n = 0
        while True:
            try:
                return await once()
            except Refused as e:
                self.refusal(e)
                for c in list(self.conns):
                    self.drop(c)
            n += 1
            if tries is not None and n >= tries:
                return None
            await asyncio.sleep(delay * (0.5 + self.rng.random()))
            delay = min(delay * 2, 0.5)

    # -- well-behaved --

    async def good(self):
        for _ in range(self.w.cycles):
            self.expected += 3
            await self.retrying(self.good_cycle)

    async def good_cycle(self):
        c = await self.connect()
        if self.w.transport == "varlink":
            v = check(await asyncio.wait_for(c.call(IFACE + ".Verify"), CALL_TIMEOUT), "Verify")
            assert "in_sync" in v, v
            self.answers += 1
            s = check(await asyncio.wait_for(c.call(IFACE + ".Status"), CALL_TIMEOUT), "Status")
            assert "daemon" in s, s
            self.answers += 1
            m = await asyncio.wait_for(c.call(IFACE + ".Monitor", more=True), CALL_TIMEOUT)
            assert check(m, "Monitor")["event"] == "status" and m.get("continues"), m
            self.answers += 1
        else:
            v = json_body(await asyncio.wait_for(c.call(NAME, PATH, NAME, "Verify"), CALL_TIMEOUT))
            assert "in_sync" in v, v
            self.answers += 1
            s = json_body(await asyncio.wait_for(c.call(NAME, PATH, NAME, "Status"), CALL_TIMEOUT))
            assert "daemon" in s, s
            self.answers += 1
            await asyncio.wait_for(c.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                          "AddMatch", "s", dbus_body_strings(MATCH)), CALL_TIMEOUT)
            await asyncio.wait_for(c.call(NAME, PATH, "org.freedesktop.DBus.Properties", "Get", "ss",
                                          dbus_body_strings(NAME, "ActiveProfile")), CALL_TIMEOUT)
            self.answers += 1
        await self.release(c)

    async def pipeliner(self):
        # D-Bus: the bus refuses more pending calls per connection than its
        # max_replies_per_connection (the load test's bus: 4).
        self.n_pipelined = 20 if self.w.transport == "varlink" else 4
        self.expected += self.n_pipelined
        await self.retrying(self.pipeline_once)

    async def pipeline_once(self):
        c = await self.connect()
        if self.w.transport == "varlink":
            await c.send(msg(IFACE + ".Status") * self.n_pipelined)
            for _ in range(self.n_pipelined):
                check(await asyncio.wait_for(c.reply(), CALL_TIMEOUT), "Status")
                self.answers += 1
        else:
            serials = []
            data = b""
            for _ in range(self.n_pipelined):
                s = c.next_serial()
                serials.append(s)
                data += dbus_call(s, NAME, PATH, NAME, "Status")
            await c.send(data)
            for s in serials:
                m = await asyncio.wait_for(c.message(), CALL_TIMEOUT)
                while m["type"] == 4:  # a signal (the bus's NameAcquired)
                    m = await asyncio.wait_for(c.message(), CALL_TIMEOUT)
                assert m["type"] == 2 and m["reply_serial"] == s, m
                self.answers += 1
        await self.release(c)

    async def halfclose(self):
        self.expected += 1
        await self.retrying(self.halfclose_once)

    async def halfclose_once(self):
        c = await self.connect()
        if self.w.transport == "varlink":
            await c.send(msg(IFACE + ".Verify"))
            c.sock.shutdown(socket.SHUT_WR)
            check(await asyncio.wait_for(c.reply(), CALL_TIMEOUT), "Verify")
            self.answers += 1
            try:
                await asyncio.wait_for(c.fill(), CALL_TIMEOUT)
                raise AssertionError(f"more after the reply: {c.buf!r}")
            except Closed:
                pass
        else:
            # The bus drops a client's connection at its EOF, pending replies and all: the half-close
            # is the last thing after a call that is answered.
            m = await asyncio.wait_for(c.call(NAME, PATH, NAME, "Verify"), CALL_TIMEOUT)
            assert m["type"] == 2, m
            self.answers += 1
            await c.send_call(NAME, PATH, NAME, "Verify")
            c.sock.shutdown(socket.SHUT_WR)
        await self.release(c, graceful=False)

    # -- hostile --

    async def take(self, setup, auth=True):
        """Connects and sets up until taken (the connection), or gives up (None)."""

        async def once():
            c = await self.connect(auth=auth)
            await setup(c)
            if self.w.transport == "varlink":
                # A refusal comes at once; peeked, so that what a slow reader leaves unread stays.
                await asyncio.sleep(0.2)
                try:
                    seen = c.sock.recv(4096, socket.MSG_PEEK | socket.MSG_DONTWAIT)
                except (BlockingIOError, ConnectionResetError):
                    seen = b""
                if seen.startswith(b'{"error":"' + TOO_MANY.encode()):
                    raise Refused(json.loads(seen.partition(b"\0")[0])["parameters"]["message"])
            return c

        return await self.retrying(once, tries=20)

    async def hold(self, setup, auth=True):
        """Takes a connection and holds it until "stop"."""
        if await self.take(setup, auth) is not None:
            await self.w.stopped.wait()

    async def slow(self):
        async def setup(c):
            if self.w.transport == "varlink":
                await c.send(msg(IFACE + ".Monitor", more=True))  # not even the first reply is read
            else:
                await c.send_call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch",
                                  "s", dbus_body_strings(MATCH))

        await self.hold(setup)

    async def partial(self):
        async def setup(c):
            if self.w.transport == "varlink":
                await c.send(msg(IFACE + ".Verify")[:20])
            else:
                await c.send(b"\0AUTH EXTERN")  # half an AUTH line, before authentication

        await self.hold(setup, auth=False)

    async def flood(self):
        """Calls written as long as the socket takes them (the daemon, or the bus, stops reading);
        no reply is read."""
        if self.w.transport == "varlink":
            one = msg(IFACE + ".Status")
            c = await self.take(lambda c: c.send(one))
            chunk = lambda: one * 200  # noqa: E731
        else:
            c = await self.take(lambda c: c.send_call(NAME, PATH, NAME, "Verify"))
            chunk = lambda: b"".join(dbus_call(c.next_serial(), NAME, PATH, NAME, "Verify")  # noqa: E731
                                     for _ in range(200))
        if c is not None:
            # D-Bus: 2000 calls, not an endless stream: the bus answers all but its
            # max_replies_per_connection with LimitsExceeded itself, as fast as it can.
            pump = asyncio.ensure_future(self.pump(c, chunk, None if self.w.transport == "varlink" else 10))
            await self.w.stopped.wait()
            pump.cancel()

    async def pump(self, c, chunk, n_chunks=None):
        try:
            while not self.w.stopped.is_set() and n_chunks != 0:
                n_chunks = None if n_chunks is None else n_chunks - 1
                data = chunk()
                await c.loop.sock_sendall(c.sock, data)
                self.sent += len(data)
        except (OSError, asyncio.CancelledError):
            pass  # closed by the other side, or the end of the test

    async def abort(self):
        for _ in range(self.w.cycles):

            async def once():
                c = await self.connect()
                if self.w.transport == "varlink":
                    await c.send(msg(IFACE + ".Verify"))
                else:
                    await c.send_call(NAME, PATH, NAME, "Verify")
                self.drop(c)

            await self.retrying(once, tries=20)

    async def bloat(self):
        """`cycles` times: a call of 1 MiB of tiny JSON values ("[{},{},…]"), its error read."""
        if self.w.transport == "varlink":
            data = msg(IFACE + ".Status", {"x": [{}] * 330000}).replace(b" ", b"")
        else:
            data = dbus_call(1, NAME, PATH, NAME, "Plan", "s", dbus_body_strings("{}," * 300000))
        for _ in range(self.w.cycles):

            async def once():
                c = await self.connect()
                await c.send(data)
                try:
                    if self.w.transport == "varlink":
                        await asyncio.wait_for(c.reply(), CALL_TIMEOUT)
                    else:
                        await asyncio.wait_for(c.message(), CALL_TIMEOUT)
                except (Closed, asyncio.TimeoutError):
                    pass
                self.drop(c)

            await self.retrying(once, tries=20)

    async def eofpartial(self):
        async def setup(c):
            if self.w.transport == "varlink":
                await c.send(msg(IFACE + ".Verify")[:20])
            else:
                await c.send(dbus_call(c.next_serial(), NAME, PATH, NAME, "Verify")[:30])
            c.sock.shutdown(socket.SHUT_WR)

        await self.hold(setup)

    async def run(self):
        try:
            await getattr(self, self.kind)()
        except Exception as e:  # a failure of this actor, reported; hostile ones may be cut off
            if self.behaved:
                self.failures.append(f"{type(e).__name__}: {e}")
        finally:
            for c in list(self.conns):
                self.drop(c)


class Worker:
    def __init__(self, config):
        self.transport = config["transport"]
        self.address = config["address"]
        self.uid = config["uid"]
        self.seed = config["seed"]
        self.cycles = config["cycles"]
        self.max_conns = config.get("max_conns") or 0
        self.kinds = config["actors"]
        self.tasks = []

    def background(self, coro):
        self.tasks.append(asyncio.ensure_future(coro))

    async def main(self):
        loop = asyncio.get_running_loop()
        self.stopped = asyncio.Event()
        # Root's clients take no more connections than root's reserve (the test's own probes
        # have the rest): the daemon then never refuses root, whatever the others hold.
        self.slots = asyncio.Semaphore(self.max_conns) if self.max_conns else _NoLimit()
        lines = asyncio.Queue()
        loop.add_reader(0, lambda: lines.put_nowait(sys.stdin.readline().strip()))
        actors = []
        for kind, n in self.kinds.items():
            actors += [Actor(kind, self, len(actors) + i) for i in range(n)]
        print(json.dumps({"ready": True}), flush=True)
        while await lines.get() != "go":
            pass
        behaved = [asyncio.ensure_future(a.run()) for a in actors if a.behaved]
        hostile = [asyncio.ensure_future(a.run()) for a in actors if not a.behaved]
        if behaved:
            await asyncio.wait(behaved)
        print(json.dumps({"behaved_done": True}), flush=True)
        while await lines.get() != "stop":
            pass
        self.stopped.set()
        for t in self.tasks:
            t.cancel()
        if hostile:
            await asyncio.wait(hostile, timeout=30)
        for t in hostile:
            t.cancel()
        loop.remove_reader(0)
        print(json.dumps({"uid": self.uid, "actors": [a.report() for a in actors]}), flush=True)


class _NoLimit:
    async def acquire(self):
        return True

    def release(self):
        pass


if __name__ == "__main__":
    asyncio.run(Worker(json.loads(sys.argv[1])).main())

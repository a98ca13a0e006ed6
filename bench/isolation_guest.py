#!/usr/bin/python3
"""The guest side of bench/isolation.py: Debian 12 with systemd as PID 1 on Debian's PREEMPT_RT
kernel, booted by GRUB (OVMF). Runs as a Type=simple unit, measures, and reports on the serial
console "@@R key=value" lines and "@@J name=JSON" documents between "@@BEGIN stage=N" and
"@@END stage=N". The host judges and tabulates; this only measures. One tool per guest (its name
in isobench.json beside this script's state), two boots:

  stage 1: update-grub (the installed system's grub.cfg, as the installer leaves it); rtpart's
    .deb installed (tuned is installed and running already); the tool's apply command, timed
    against the moment the host reaches its runtime isolation (see Isolation); reboot;
  stage 2: the kernel command line the tool's bootloader path wrote; the time at which the host
    reached its runtime isolation after boot; the housekeeping load on the housekeeping CPUs;
    over one window, on every isolated CPU: /proc/interrupts and /proc/softirqs deltas, the
    threads sched_switch shows running there and osnoise's noise (the osnoise tracer is the busy
    realtime task of the window); then timerlat alone; power off.

Also the load's own subcommands (run pinned to the housekeeping CPUs): load-disk, load-net HOST
PORT, load-fork.
"""
import json
import mmap
import os
import re
import socket
import subprocess
import sys
import termios
import threading
import time

S = "/var/lib/rtpart-vm-test"
T = "/sys/kernel/tracing"
ME = os.path.abspath(__file__)
POLL = 0.2  # seconds between two looks at the isolation (each look reads every task: not free under TCG)


def cpus_parse(text):
    """A CPU list ("0-2,5") as a set."""
    out = set()
    for part in text.strip().split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def cpus_from_mask(text):
    """A hex CPU mask ("f" or "00000000,0000000f") as a set."""
    v = int(text.strip().replace(",", "") or "0", 16)
    return {i for i in range(v.bit_length()) if v >> i & 1}


def cpus_format(cpus):
    cpus, out, i = sorted(cpus), [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def write(path, text, append=False):
    """Writes text to a kernel file, replacing its content or, with append (kprobe_events, where a
    write that truncates would drop every probe), after it; the errno when the kernel refuses it,
    else 0."""
    try:
        fd = os.open(path, os.O_WRONLY | (os.O_APPEND if append else os.O_TRUNC))
    except OSError as e:
        return e.errno
    try:
        os.write(fd, text.encode())
        return 0
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)


class Console:
    """The serial console the host reads, drained before a reboot or a power-off."""

    def __init__(self):
        self.f = open("/dev/ttyS0", "w", buffering=1)

    def r(self, key, value):
        self.f.write(f"@@R {key}={' '.join(str(value).split())}\n")

    def j(self, key, doc):
        self.f.write(f"@@J {key}={json.dumps(doc, separators=(',', ':'), sort_keys=True)}\n")

    def line(self, text):
        self.f.write(text + "\n")

    def drain(self):
        self.f.flush()
        try:
            termios.tcdrain(self.f.fileno())
        except termios.error:
            pass


def run(cmd, timeout=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return p.returncode, p.stdout


# ---- /proc/interrupts and /proc/softirqs ----


def per_cpu_table(path):
    """{row: ([count per CPU], description)} of /proc/interrupts or /proc/softirqs."""
    lines = read(path).splitlines()
    if not lines:
        return {}
    ncpu = len(lines[0].split())
    rows = {}
    for line in lines[1:]:
        key, _, rest = line.partition(":")
        words = rest.split()
        counts = []
        for w in words[:ncpu]:
            if not w.isdigit():
                break
            counts.append(int(w))
        rows[key.strip()] = (counts + [0] * (ncpu - len(counts)), " ".join(words[len(counts):]))
    return rows


def irq_action(desc):
    """The handler's name of an /proc/interrupts description (its last word: "virtio0-req.0")."""
    return desc.split()[-1] if desc.split() else ""


# ---- the runtime isolation ----


def movable_irqs():
    """The action names of the IRQs whose affinity the kernel lets be written (its own value
    written back: the timer, the cascade and managed IRQs refuse), and of those it refuses."""
    movable, fixed = [], []
    for key, (_, desc) in per_cpu_table("/proc/interrupts").items():
        if not key.isdigit():
            continue
        cur = read(f"/proc/irq/{key}/smp_affinity_list").strip()
        (fixed if not cur or write(f"/proc/irq/{key}/smp_affinity_list", cur) else movable).append(irq_action(desc))
    return movable, fixed


def task_flags(path):
    """PF_* flags (field 9 of a /proc/PID/stat), or None for a task that has gone."""
    text = read(path)
    if not text:
        return None
    return int(text.rpartition(")")[2].split()[6])


PF_KTHREAD = 0x00200000
PF_NO_SETAFFINITY = 0x04000000  # bound to its CPUs by the kernel: per-CPU threads, workers, rescuers


def isolation_offenders(hk, fixed):
    """What keeps the host from its runtime isolation on the housekeeping CPUs hk, by condition:
    irq (a movable IRQ may run elsewhere), default_irq (/proc/irq/default_smp_affinity), workqueue
    (the unbound workqueues' cpumask), task (a user thread may run elsewhere), kthread (a kernel
    thread may run elsewhere whose affinity may be set: not PF_NO_SETAFFINITY, and not an IRQ's
    thread, which follows its IRQ at its next interrupt). Empty lists: reached."""
    out = {"irq": [], "default_irq": [], "workqueue": [], "task": [], "kthread": []}
    for key, (_, desc) in per_cpu_table("/proc/interrupts").items():
        if key.isdigit() and irq_action(desc) not in fixed:
            cur = read(f"/proc/irq/{key}/smp_affinity_list").strip()
            if cur and not cpus_parse(cur) <= hk:
                out["irq"].append(f"{key}:{irq_action(desc)}={cur}")
    if not cpus_from_mask(read("/proc/irq/default_smp_affinity")) <= hk:
        out["default_irq"].append(read("/proc/irq/default_smp_affinity").strip())
    wq = read("/sys/devices/virtual/workqueue/cpumask")
    if wq and not cpus_from_mask(wq) <= hk:
        out["workqueue"].append(wq.strip())
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            status = read(f"/proc/{pid}/task/{tid}/status")
            m = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.M)
            name = re.search(r"^Name:\s*(.*)$", status, re.M)
            flags = task_flags(f"/proc/{pid}/task/{tid}/stat")
            if not m or not name or flags is None:
                continue
            if cpus_parse(m.group(1)) <= hk:
                continue
            if flags & PF_KTHREAD:
                if flags & PF_NO_SETAFFINITY or name.group(1).startswith("irq/"):
                    continue
                out["kthread"].append(f"{name.group(1)}[{tid}]={m.group(1)}")
            else:
                out["task"].append(f"{name.group(1)}[{tid}]={m.group(1)}")
    return out


class Watch(threading.Thread):
    """Looks at the isolation every POLL seconds from its start: when each condition first held,
    and when all did (CLOCK_MONOTONIC: seconds since the kernel started), with the start of the
    look before (it had not yet: the moment lies between the two)."""

    def __init__(self, hk, fixed):
        super().__init__(daemon=True)
        self.hk, self.fixed = hk, fixed
        self.first = {}
        self.reached = None
        self.not_yet = None
        self.last = None
        self.stop = threading.Event()
        self.looks = 0

    def run(self):
        while not self.stop.is_set():
            t = time.monotonic()
            off = isolation_offenders(self.hk, self.fixed)
            self.looks += 1
            self.last = off
            for k, v in off.items():
                if not v and k not in self.first:
                    self.first[k] = t
            if self.reached is None:
                if any(off.values()):
                    self.not_yet = t
                else:
                    self.reached = t
            self.stop.wait(POLL)

    def wait(self, timeout):
        end = time.monotonic() + timeout
        while self.reached is None and time.monotonic() < end:
            time.sleep(POLL)
        return self.reached


# ---- the housekeeping load ----


# The load is paced: the same work each second in both guests, whatever share of the host the
# housekeeping vCPU gets at the time (unpaced, one guest did four times the other's on this loaded
# host). The CPU hog, at nice 19, takes whatever is left of the housekeeping CPU.
NET_CHUNK, NET_PERIOD = 4096, 0.03  # each way: 133 KiB/s, the host's peer as this side
# Targets per second the housekeeping vCPU kept up with in both guests here (20 forks a second and
# 400 KiB/s of network were not).
RATES = {"disk_bytes": 640 << 10, "net_bytes": int(2 * NET_CHUNK / NET_PERIOD), "forks": 5}


def paced(period, step):
    """step() every period seconds, for ever; a late step is not made up for with a burst."""
    t = time.monotonic()
    while True:
        step()
        t += period
        delay = t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            t = time.monotonic()


def load_disk():
    """Each second 256 KiB written and read back with O_DIRECT (virtio-blk requests, no page
    cache) and 128 KiB written through the page cache and fsync'd (writeback, the journal)."""
    buf = mmap.mmap(-1, 256 << 10)  # page-aligned, as O_DIRECT wants
    buf.write(b"\x5a" * len(buf))
    direct = os.open("/var/tmp/isobench.io", os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o600)
    cached = os.open("/var/tmp/isobench.io.b", os.O_WRONLY | os.O_CREAT, 0o600)

    def step():
        os.pwrite(direct, buf, 0)
        os.preadv(direct, [buf], 0)
        os.pwrite(cached, buf[:128 << 10], 0)
        os.fsync(cached)

    paced(1.0, step)


def load_net(host, port):
    """A TCP stream both ways through qemu's user-mode network (virtio-net): NET_CHUNK sent every
    NET_PERIOD, whatever the host sent read; reconnects when the connection drops."""
    chunk = b"\0" * NET_CHUNK
    while True:
        try:
            s = socket.create_connection((host, int(port)), timeout=10)
            s.setblocking(False)

            def step():
                try:
                    s.send(chunk)
                except BlockingIOError:
                    pass
                try:
                    while True:
                        if not s.recv(65536):
                            raise ConnectionResetError("the host closed it")
                except BlockingIOError:
                    pass

            paced(NET_PERIOD, step)
        except OSError:
            time.sleep(1)


def load_fork():
    """RATES["forks"] children a second, each exiting at once and reaped (fork, exit, wait)."""

    def step():
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)

    paced(1.0 / RATES["forks"], step)


def start_load(hk, host, port):
    """The four loads, each pinned to the housekeeping CPUs (their own process groups)."""
    cmds = {"disk": [sys.executable, ME, "load-disk"],
            "net": [sys.executable, ME, "load-net", host, str(port)],
            "fork": [sys.executable, ME, "load-fork"],
            "cpu": ["nice", "-n", "19", "sh", "-c", "while :; do :; done"]}
    procs = []
    for name in ("disk", "net", "fork", "cpu"):
        procs.append(subprocess.Popen(["taskset", "-c", cpus_format(hk)] + cmds[name], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    return procs


def stop_load(procs):
    for p in procs:
        try:
            os.killpg(p.pid, 9)
        except OSError:
            pass
        p.wait()


def load_figures():
    """What shows the load ran: forks, the root disk's sectors, the NIC's bytes."""
    forks = int(re.search(r"^processes (\d+)", read("/proc/stat"), re.M).group(1))
    sectors = 0
    for line in read("/proc/diskstats").splitlines():
        w = line.split()
        if len(w) > 9 and w[2] == "vda":
            sectors = int(w[5]) + int(w[9])
    net = 0
    for line in read("/proc/net/dev").splitlines()[2:]:
        name, _, rest = line.partition(":")
        if name.strip() != "lo":
            w = rest.split()
            net += int(w[0]) + int(w[8])
    return {"forks": forks, "disk_sectors": sectors, "net_bytes": net}


def nic_up():
    """The first NIC up with qemu's user-network address (no DHCP client in the guest)."""
    for name in sorted(os.listdir("/sys/class/net")):
        if name != "lo":
            run(["ip", "link", "set", name, "up"])
            run(["ip", "addr", "add", "10.0.2.15/24", "dev", name])
            return name
    return ""


# ---- tracefs ----


def tracefs(name, value):
    e = write(f"{T}/{name}", value)
    if e:
        raise OSError(e, f"{T}/{name}: cannot write {value!r}")


TRACE_CPU = re.compile(r"^\s*(.*?)-(\d+)\s+\[(\d+)\]\s+\S+\s+[\d.]+:\s+(.*)$")
OSNOISE = re.compile(r"^(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")
NOISE_EVENT = re.compile(r"^(nmi|irq|softirq|thread)_noise:\s+(.*?)\s+start\s")
SWITCH = re.compile(r"^sched_switch:.*==> next_comm=(.*) next_pid=(\d+) next_prio=")
TIMERLAT = re.compile(r"#\d+\s+context\s+(irq|thread)\s+timer_latency\s+(\d+)\s+ns")


class IpiSenders:
    """Who sends the IPIs that reach the isolated CPUs: kprobes on x86's senders of function-call
    and reschedule IPIs, filtered on an isolated target, each with its kernel stack, in a tracefs
    instance of their own (all CPUs: the senders run on the housekeeping ones). A probe whose
    symbol this kernel lacks is left out."""

    PROBES = {"cal": "native_send_call_func_ipi mask=+0(%di):x64",
              "cal1": "native_send_call_func_single_ipi target=%di:s32",
              "res": "native_smp_send_reschedule target=%di:s32"}
    I = f"{T}/instances/isobench"

    def __init__(self, isolated):
        self.isolated = isolated
        self.probes = []
        try:
            os.mkdir(self.I)
        except FileExistsError:
            pass
        tracefs("instances/isobench/tracing_on", "0")
        tracefs("instances/isobench/buffer_size_kb", "4096")
        targets = " || ".join(f"target == {c}" for c in sorted(isolated))
        mask = format(sum(1 << c for c in isolated), "#x")
        for name, spec in self.PROBES.items():
            if write(f"{T}/kprobe_events", f"p:isobench/{name} {spec}\n", append=True):
                continue  # this kernel has no such symbol
            ev = f"instances/isobench/events/isobench/{name}"
            cond = f"mask & {mask}" if name == "cal" else targets
            if write(f"{T}/{ev}/filter", cond) or write(f"{T}/{ev}/trigger", f"stacktrace if {cond}") or \
                    write(f"{T}/{ev}/enable", "1"):
                continue
            self.probes.append(name)
        tracefs("instances/isobench/tracing_on", "1")

    def clear(self):
        tracefs("instances/isobench/trace", "")

    def stop(self):
        """{probe: {"sender, frames": count}}: the senders seen since clear(), then all removed."""
        tracefs("instances/isobench/tracing_on", "0")
        text = read(f"{self.I}/trace")
        for name in self.probes:
            ev = f"{T}/instances/isobench/events/isobench/{name}"
            write(f"{ev}/enable", "0")
            write(f"{ev}/trigger", "!stacktrace")
        try:
            os.rmdir(self.I)
        except OSError:
            pass
        for name in self.probes:
            write(f"{T}/kprobe_events", f"-:isobench/{name}\n", append=True)
        return ipi_senders_parse(text, self.probes)


def ipi_senders_parse(text, probes):
    """{probe: {"sender: frames": count}} of an IpiSenders instance's trace: each probe's event
    line (its sender's comm, digits as N) and the first frames of the kernel stack after it."""
    out, cur, frames = {name: {} for name in probes}, None, []

    def done():
        if cur:
            key = cur[1] + ": " + " < ".join(frames[:6])
            out[cur[0]][key] = out[cur[0]].get(key, 0) + 1

    for line in text.splitlines():
        m = TRACE_CPU.match(line)
        if m:
            body = m.group(4)
            ev = re.match(r"^(cal1|cal|res):", body)
            if ev:
                done()
                cur, frames = (ev.group(1), re.sub(r"\d+", "N", m.group(1).strip())), []
            elif not body.startswith("<stack trace>"):
                done()
                cur = None
        elif line.startswith(" => ") and cur:
            frame = line[4:].split("+")[0]
            if not STACK_NOISE.match(frame):
                frames.append(frame)
    done()
    return out


# The frames of the probe itself and of the IPI's sending, above where it comes from.
STACK_NOISE = re.compile(r"^(kprobe|ftrace|trace_|arch_ftrace|native_send_call_func|native_smp_send_reschedule)")


def osnoise_cpu(c, text):
    """One isolated CPU's figures from its trace: osnoise's per-period sums, the sources of its
    noise events, and the threads sched_switch switched to (but idle and osnoise's own)."""
    fig = {"periods": 0, "runtime_us": 0, "noise_us": 0, "max_single_us": 0, "hw": 0, "nmi": 0, "irq": 0,
           "softirq": 0, "thread": 0, "noise_sources": {}}
    for line in text.splitlines():
        m = TRACE_CPU.match(line)
        if not m or int(m.group(3)) != c:
            continue
        body = m.group(4)
        o = OSNOISE.match(body)
        if o:
            v = [int(x) if i != 2 else 0 for i, x in enumerate(o.groups())]
            fig["periods"] += 1
            fig["runtime_us"] += v[0]
            fig["noise_us"] += v[1]
            fig["max_single_us"] = max(fig["max_single_us"], v[3])
            for i, k in enumerate(("hw", "nmi", "irq", "softirq", "thread")):
                fig[k] += v[4 + i]
            continue
        n = NOISE_EVENT.match(body)
        if n:
            src = n.group(1) + ":" + re.sub(r"[-:]\d+$", "", n.group(2))
            fig["noise_sources"][src] = fig["noise_sources"].get(src, 0) + 1
    fig["threads"], fig["switches"] = switches_cpu(c, text, ())
    return fig


def switches_cpu(c, text, own):
    """The threads sched_switch switched to on CPU c, but idle and the window's own tasks (own:
    PIDs, and comms starting so), and how many times."""
    threads, n = {}, 0
    for line in text.splitlines():
        m = TRACE_CPU.match(line)
        s = SWITCH.match(m.group(4)) if m and int(m.group(3)) == c else None
        if not s or s.group(1).startswith(("swapper/", "osnoise/")) or int(s.group(2)) in own:
            continue
        key = f"{s.group(1)}[{s.group(2)}]"
        threads[key] = threads.get(key, 0) + 1
        n += 1
    return threads, n


def trace_window(isolated, tracer, seconds, snapshot, own=()):
    """tracer (nop or osnoise) with the sched_switch and osnoise events on the isolated CPUs, and
    the IPI senders, for seconds once started; snapshot() at the window's start and end. Returns
    ({cpu: trace}, (start, end) snapshots, IPI senders)."""
    tracefs("tracing_on", "0")
    tracefs("current_tracer", "nop")
    tracefs("buffer_size_kb", "8192")
    tracefs("tracing_cpumask", format(sum(1 << c for c in isolated), "x"))
    tracefs("osnoise/cpus", cpus_format(isolated))
    tracefs("events/sched/sched_switch/enable", "1")
    for ev in ("irq_noise", "softirq_noise", "thread_noise", "nmi_noise"):
        tracefs(f"events/osnoise/{ev}/enable", "1")
    ipis = IpiSenders(isolated)
    tracefs("current_tracer", tracer)
    tracefs("tracing_on", "1")
    time.sleep(2)  # osnoise's threads started on every CPU
    tracefs("trace", "")
    ipis.clear()
    first = snapshot()
    time.sleep(seconds)
    last = snapshot()
    tracefs("tracing_on", "0")
    senders = ipis.stop()
    per_cpu = {c: read(f"{T}/per_cpu/cpu{c}/trace") for c in isolated}
    tracefs("current_tracer", "nop")
    tracefs("events/enable", "0")
    return per_cpu, (first, last), senders


def busy_window(isolated, hk, seconds, snapshot, launcher):
    """The realtime task of a nohz_full CPU: one busy loop in user space on each isolated CPU
    (SCHED_OTHER, as a vCPU thread runs guest code: the kernel's own threads may still run there),
    started the tool's way (launcher), for seconds. Per isolated CPU the /proc/interrupts and
    /proc/softirqs deltas and the threads that ran beside the loop; the IPI senders."""
    loops = [subprocess.Popen(launcher + ["taskset", "-c", str(c), "sh", "-c", "while :; do :; done"],
                              stdin=subprocess.DEVNULL, start_new_session=True) for c in sorted(isolated)]
    try:
        time.sleep(2)  # each alone on its CPU: the tick stops
        own = {p.pid for p in loops}
        placed = {str(c): {"running": p.poll() is None,
                           "allowed": (re.findall(r"^Cpus_allowed_list:\s*(\S+)", read(f"/proc/{p.pid}/status"), re.M)
                                       or [""])[0],
                           "cgroup": read(f"/proc/{p.pid}/cgroup").strip()} for c, p in zip(sorted(isolated), loops)}
        per_cpu, (first, last), senders = trace_window(isolated, "nop", seconds, snapshot)
    finally:
        stop_load(loops)
    fig = window_figures(isolated, hk, first, last)
    fig["busy_loops"] = placed
    for c, text in per_cpu.items():
        fig["cpu"][str(c)]["threads"], fig["cpu"][str(c)]["switches"] = switches_cpu(c, text, own)
    fig["ipi_senders"] = senders
    return fig


def osnoise_window(isolated, seconds, snapshot):
    """The osnoise tracer on the isolated CPUs (its busy kernel thread the task) for seconds: per
    CPU its noise figures, and the same counts as the busy window's, for reference."""
    per_cpu, (first, last), senders = trace_window(isolated, "osnoise", seconds, snapshot)
    fig = window_figures(isolated, set(), first, last)
    for c, text in per_cpu.items():
        fig["cpu"][str(c)]["osnoise"] = osnoise_cpu(c, text)
    fig["ipi_senders"] = senders
    return fig


def timerlat_window(isolated, seconds):
    """timerlat on the isolated CPUs for seconds: its samples and maxima (ns), by context."""
    tracefs("tracing_on", "0")
    tracefs("current_tracer", "nop")
    tracefs("osnoise/cpus", cpus_format(isolated))
    tracefs("current_tracer", "timerlat")
    tracefs("tracing_on", "1")
    time.sleep(seconds)
    tracefs("tracing_on", "0")
    out = {}
    for c in isolated:
        fig = {"irq_samples": 0, "irq_max_ns": 0, "thread_samples": 0, "thread_max_ns": 0}
        for m in TIMERLAT.finditer(read(f"{T}/per_cpu/cpu{c}/trace")):
            fig[f"{m.group(1)}_samples"] += 1
            fig[f"{m.group(1)}_max_ns"] = max(fig[f"{m.group(1)}_max_ns"], int(m.group(2)))
        out[c] = fig
    tracefs("current_tracer", "nop")
    return out


def snapshot():
    return {"t": time.monotonic(), "interrupts": per_cpu_table("/proc/interrupts"),
            "softirqs": per_cpu_table("/proc/softirqs"), "load": load_figures()}


def window_figures(isolated, hk, first, last):
    """Per isolated CPU: device IRQs (by handler), the architecture's rows (LOC, CAL, RES, TLB...)
    and softirqs by kind, as deltas over the window; and what the housekeeping CPUs did meanwhile
    (the load's evidence)."""
    seconds = last["t"] - first["t"]
    cpus = {}
    for c in isolated:
        d = {"device_irqs": 0, "device_irq_by_name": {}, "arch": {}, "softirqs": {}}
        for key, (counts, desc) in last["interrupts"].items():
            before = first["interrupts"].get(key, ([0] * len(counts), ""))[0]
            n = counts[c] - before[c] if c < len(counts) and c < len(before) else 0
            if key.isdigit():
                d["device_irqs"] += n
                if n:
                    d["device_irq_by_name"][f"{key}:{irq_action(desc)}"] = n
            else:
                d["arch"][key] = n
        for key, (counts, _) in last["softirqs"].items():
            before = first["softirqs"].get(key, ([0] * len(counts), ""))[0]
            d["softirqs"][key] = counts[c] - before[c]
        cpus[str(c)] = d
    hk_irqs = {}
    for key, (counts, desc) in last["interrupts"].items():
        before = first["interrupts"].get(key, ([0] * len(counts), ""))[0]
        n = sum(counts[c] - before[c] for c in hk if c < len(counts) and c < len(before))
        if key.isdigit() and n:
            hk_irqs[f"{key}:{irq_action(desc)}"] = n
    load = {k: last["load"][k] - first["load"][k] for k in first["load"]}
    return {"seconds": seconds, "cpu": cpus, "housekeeping_irqs": hk_irqs, "load": load}


# ---- the stages ----


# Each tool's apply and verify commands and unit, and how a realtime task gets onto the isolated
# CPUs with it: tuned only restricts the affinity of what runs, so taskset from anywhere; rtpart
# confines every service to the housekeeping CPUs and gives the isolated ones to its partition's
# slice, where realtime work is started (systemd-run --slice=, as rtpart's profile says).
TOOLS = {"tuned": {"apply": ["tuned-adm", "profile", "realtime-virtual-host"], "verify": ["tuned-adm", "verify"],
                   "unit": "tuned.service", "launcher": []},
         "rtpart": {"apply": ["rtpartctl", "apply", "realtime-virtual-host"], "verify": ["rtpartctl", "verify"],
                    "unit": "rtpartd.service",
                    "launcher": ["systemd-run", "--quiet", "--scope", "--slice=rtpart\\x2drt.slice"]}}


def tool_log(con, conf):
    """What the tool logged as a warning or an error (tuned: its log file; rtpart: its unit's
    journal), for the host to print."""
    if conf["tool"] == "tuned":
        # Its log file spans both boots: what the first boot printed is not printed again.
        lines = [l for l in read("/var/log/tuned/tuned.log").splitlines() if " WARNING " in l or " ERROR " in l]
        seen = int(read(f"{S}/log-lines", "0") or 0)
        with open(f"{S}/log-lines", "w") as f:
            f.write(f"{len(lines)}\n")
        lines = lines[seen:]
    else:
        lines = run(["journalctl", "-b", "-u", "rtpartd.service", "-p", "warning", "--no-pager", "-o", "cat"])[1].splitlines()
    for line in lines[-40:]:
        con.line("@@O log| " + line)


def bootloader_state(con):
    """The lines of the bootloader's configuration the tools write."""
    for line in read("/boot/grub/grub.cfg").splitlines():
        if re.match(r"\s*(linux|set tuned_params)\b", line):
            con.r("grub_cfg", line.strip())
    con.r("default_grub_tuned", " | ".join(l for l in read("/etc/default/grub").splitlines() if "tuned" in l))
    con.r("grub_dropin", " | ".join(read("/etc/default/grub.d/rtpart.cfg").splitlines()))


def stage1(con, conf, hk):
    rc, outp = run(["update-grub"])
    con.r("update_grub_rc", rc)
    if rc:
        con.line("@@O update-grub| " + outp.replace("\n", "\n@@O update-grub| "))
    if conf["tool"] == "rtpart":
        rc, outp = run(["sh", "-c", f"cd {S} && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ./rtpart_*.deb"])
        con.r("install_rc", rc)
        if rc:
            con.line("@@O install| " + outp[-3000:].replace("\n", "\n@@O install| "))
    con.r("unit_before", run(["systemctl", "is-active", TOOLS[conf["tool"]]["unit"]])[1])
    if conf["tool"] == "tuned":
        con.r("tuned_profile_before", run(["tuned-adm", "active"])[1])
    movable, fixed = movable_irqs()
    with open(f"{S}/fixed-irqs.json", "w") as f:
        json.dump(fixed, f)
    con.r("irqs_fixed", " ".join(fixed))
    con.r("irqs_movable", " ".join(movable))
    watch = Watch(hk, fixed)
    t0 = time.monotonic()
    watch.start()
    rc, outp = run(TOOLS[conf["tool"]]["apply"], timeout=conf["apply_timeout"])
    t_cmd = time.monotonic()
    watch.wait(max(0.0, conf["apply_timeout"] - (t_cmd - t0)))
    watch.stop.set()
    watch.join()
    con.r("apply_rc", rc)
    con.line("@@O apply| " + outp[-3000:].rstrip().replace("\n", "\n@@O apply| "))
    con.j("apply", {"command": " ".join(TOOLS[conf["tool"]]["apply"]), "rc": rc, "command_s": t_cmd - t0,
                    "reached_s": None if watch.reached is None else watch.reached - t0,
                    "not_yet_s": None if watch.not_yet is None else watch.not_yet - t0,
                    "first_s": {k: v - t0 for k, v in watch.first.items()}, "looks": watch.looks,
                    "offenders": watch.last})
    bootloader_state(con)


def stage2(con, conf, hk, isolated, watch, started):
    con.r("cmdline", read("/proc/cmdline"))
    con.r("isolated", read("/sys/devices/system/cpu/isolated"))
    con.r("nohz_full", read("/sys/devices/system/cpu/nohz_full"))
    unit_t = run(["systemctl", "show", "-P", "ActiveEnterTimestampMonotonic", TOOLS[conf["tool"]]["unit"]])[1].strip()
    unit_s = run(["systemctl", "show", "-P", "InactiveExitTimestampMonotonic", TOOLS[conf["tool"]]["unit"]])[1].strip()
    watch.wait(conf["apply_timeout"])
    con.j("boot", {"watch_started_s": started, "reached_s": watch.reached, "not_yet_s": watch.not_yet,
                   "looks": watch.looks, "first_s": watch.first, "offenders": watch.last,
                   "unit_started_s": int(unit_s) / 1e6 if unit_s.isdigit() else None,
                   "unit_active_s": int(unit_t) / 1e6 if unit_t.isdigit() else None})
    watch.stop.set()
    rc, outp = run(TOOLS[conf["tool"]]["verify"], timeout=600)
    con.r("verify_rc", rc)
    con.line("@@O verify| " + outp[-2000:].rstrip().replace("\n", "\n@@O verify| "))
    bootloader_state(con)
    time.sleep(conf["settle"])
    con.r("nic", nic_up())
    procs = start_load(hk, "10.0.2.2", conf["port"])
    try:
        time.sleep(conf["warmup"])
        fig = busy_window(isolated, hk, conf["window"], snapshot, TOOLS[conf["tool"]]["launcher"])
        fig["osnoise"] = osnoise_window(isolated, conf["window"], snapshot)
        fig["timerlat"] = timerlat_window(isolated, conf["timerlat"])
    finally:
        stop_load(procs)
    con.j("window", fig)


def main():
    if len(sys.argv) > 1:
        if sys.argv[1] == "load-disk":
            return load_disk()
        if sys.argv[1] == "load-net":
            return load_net(sys.argv[2], sys.argv[3])
        if sys.argv[1] == "load-fork":
            return load_fork()
    with open(f"{S}/isobench.json") as f:
        conf = json.load(f)
    hk, isolated = cpus_parse(conf["housekeeping"]), cpus_parse(conf["isolated"])
    stage = read(f"{S}/stage").strip() or "1"
    watch, started = None, time.monotonic()
    if stage == "2":
        # From the unit's start on: when the host reached its isolation after the boot.
        watch = Watch(hk, set(json.loads(read(f"{S}/fixed-irqs.json", "[]"))))
        watch.start()
    try:
        run(["systemctl", "is-system-running", "--wait"], timeout=900)
    except subprocess.TimeoutExpired:
        pass  # reported below as the state it is in
    con = Console()
    con.line(f"@@BEGIN stage={stage}")
    con.r("tool", conf["tool"])
    con.r("system_state", run(["systemctl", "is-system-running"])[1])
    con.r("failed_units", run(["systemctl", "list-units", "--failed", "--plain", "--no-legend"])[1])
    con.r("kernel", os.uname().release)
    con.r("realtime", read("/sys/kernel/realtime"))
    try:
        if stage == "1":
            stage1(con, conf, hk)
        else:
            stage2(con, conf, hk, isolated, watch, started)
    except Exception as e:  # noqa: BLE001 - reported to the host, which fails the run
        con.r("error", f"{type(e).__name__}: {e}")
    tool_log(con, conf)
    if stage == "1":
        with open(f"{S}/stage", "w") as f:
            f.write("2\n")
            f.flush()
            os.fsync(f.fileno())
    con.line(f"@@END stage={stage}")
    con.drain()
    os.sync()
    run(["systemctl", "reboot" if stage == "1" else "poweroff"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

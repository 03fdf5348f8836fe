"""MPIJob Launcher: run the ranks on the Workers with `mpirun` and check what they report.

`mpirun` reads the hostfile the engine wrote (OMPI_MCA_orte_default_hostfile=
/etc/mpi/hostfile) and starts its daemon on each Worker through the rsh agent
OMPI_MCA_plm_rsh_agent=/etc/mpi/kubexec.sh, which runs `/opt/kube/kubectl exec
<worker> -- /bin/sh -c ...` with the Launcher's service account: Kubeflow v1's design.
The ranks run mpi_train.py with this Python (the one with mpi4py). The Launcher then
checks that there is one rank per slot, each in a different Worker pod of the hostfile,
that every rank ends with the same model, close to the true weights, and that pi came
out right; it prints one `result:` line and exits 1 when anything is off.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

HOSTFILE = Path(os.environ.get("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"))
SCRIPT = Path(__file__).with_name("mpi_train.py")
TIMEOUT_S = 300
TOLERANCE = 0.02
RANK_LINE = re.compile(
    r"^rank: (?P<rank>\d+) of (?P<size>\d+) in pod (?P<pod>\S+), .*?max weight error "
    r"(?P<error>[0-9.]+), model (?P<model>[0-9a-f]+)(?:, pi (?P<pi>[0-9.]+))?$")


def slots() -> dict[str, int]:
    """Host -> slots, from the hostfile (`<host> slots=<n>` lines)."""
    hosts: dict[str, int] = {}
    for line in HOSTFILE.read_text().splitlines():
        words = line.split()
        if words:
            found = [int(w.split("=", 1)[1]) for w in words[1:] if w.startswith("slots=")]
            hosts[words[0]] = found[0] if found else 1
    return hosts


def main() -> int:
    hosts = slots()
    ranks = sum(hosts.values())
    command = ["mpirun", "-np", str(ranks), "--bind-to", "none"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    command += [sys.executable, str(SCRIPT)]
    print(f"launcher: {' '.join(command)} over {', '.join(hosts)}", flush=True)
    run = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S,
                         check=False)
    sys.stdout.write(run.stdout)
    sys.stdout.flush()
    sys.stderr.write(run.stderr)
    sys.stderr.flush()
    if run.returncode != 0:
        print(f"result: mpirun exited {run.returncode} (failed)", flush=True)
        return 1
    reports = [m for m in map(RANK_LINE.match, run.stdout.splitlines()) if m]
    pods = {m["pod"] for m in reports}
    models = {m["model"] for m in reports}
    worst = max((float(m["error"]) for m in reports), default=math.inf)
    estimates = [float(m["pi"]) for m in reports if m["pi"]]
    ok = (len(reports) == ranks and pods == set(hosts) and len(models) == 1
          and worst < TOLERANCE and len(estimates) == 1 and abs(estimates[0] - math.pi) < 1e-9)
    pi_text = f"{estimates[0]:.10f}" if estimates else "missing"
    print(f"result: mpi launcher: {len(reports)} of {ranks} ranks in pods "
          f"{', '.join(sorted(pods))}, pi {pi_text}, max weight error {worst:.4f}, model "
          f"{', '.join(sorted(models))} the same on every rank ({'ok' if ok else 'WRONG'})",
          flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

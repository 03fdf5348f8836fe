#!/usr/bin/env bash
# Build the engine's image without a container registry, then run it as a cluster would run
# it (uid 65532, read-only root filesystem, service-account files) against the embedded API
# server and watch one job finish.
#
# Usage: bash tools/build-image.sh [options]        (as root, from anywhere)
#
#   --rebuild-base     debootstrap the Debian base again (default: reuse it)
#   --work-dir DIR     base rootfs, image store and image archive (default: /var/tmp/jobmachine-image)
#   --runner R         how to run the image: auto (podman, else chroot), podman or chroot
#   --pip-cert FILE    CA bundle pip uses inside the build (default: this machine's,
#                      /etc/ssl/certs/ca-certificates.crt, so a TLS-intercepting proxy works)
#   --timeout S        how long to wait for the job to succeed (default: 120)
#   -h, --help         show this help
#
# Steps: tools -> Debian base rootfs (debootstrap) -> base image -> engine image (Dockerfile,
# BASE_IMAGE build arg) -> image archive -> embedded API server (no engine) -> service
# account -> engine from the image -> one job -> report. Where this machine refuses
# something (overlay mounts, the OCI runtime, rlimits), the exact error is printed and the
# fallback used is named; the report lists them all.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK_DIR=/var/tmp/jobmachine-image
REBUILD_BASE=false
RUNNER=auto
PIP_CERT=/etc/ssl/certs/ca-certificates.crt
TIMEOUT=120

SUITE=bookworm
MIRROR=http://deb.debian.org/debian
BASE_IMAGE=localhost/jobmachine-base:$SUITE
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/pyproject.toml")
IMAGE=localhost/jobmachine:$VERSION
SYSTEM_NAMESPACE=jobmachine-system
SA_MOUNT=/var/run/secrets/kubernetes.io/serviceaccount
JOB_MANIFEST=$ROOT/examples/pytorch-succeeds.yaml
JOB=pytorchjob/pytorch-succeeds
# Container runtimes default to rlimits above this machine's hard limits when they can; an
# explicit, modest pair (the engine needs a few dozen descriptors) works without privileges.
ULIMITS=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
# The Deployment's security context. --read-only-tmpfs=false: no writable /tmp either, as
# readOnlyRootFilesystem without an emptyDir; the engine writes nothing to disk.
SECURITY=(--user 65532:65532 --read-only --read-only-tmpfs=false --cap-drop ALL
          --security-opt no-new-privileges)

STORE=()        # --root/--runroot/--storage-driver, shared by buildah and podman
BUILD_OPTS=()   # how buildah runs the Dockerfile's RUN (runtime or isolation)
RUN_OPTS=()     # what `podman run` needs on this machine
RUN_DIR=""      # this run's server data, service-account files and logs
SERVER_PID=""
ENGINE_PID=""   # the chroot runner's process
CONTAINER=""    # the podman runner's container
IMAGE_MOUNTED=false
SUCCEEDED=false
FALLBACKS=()
REFUSAL=""      # the first line of the last refused probe's output
STEP_NAMES=()
STEP_SECONDS=()
STEP_STARTED=$SECONDS

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

parse_args() {
    while (($#)); do
        case $1 in
            --rebuild-base) REBUILD_BASE=true ;;
            --work-dir) WORK_DIR=${2:?--work-dir needs a directory}; shift ;;
            --runner) RUNNER=${2:?--runner needs auto, podman or chroot}; shift ;;
            --pip-cert) PIP_CERT=${2:?--pip-cert needs a file}; shift ;;
            --timeout) TIMEOUT=${2:?--timeout needs seconds}; shift ;;
            -h | --help) usage; exit 0 ;;
            *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
        esac
        shift
    done
    case $RUNNER in auto | podman | chroot) ;; *) echo "--runner: auto, podman or chroot" >&2; exit 2 ;; esac
}

# A heading per step; the previous step's duration is recorded for the report.
step() {
    finish_step
    STEP_NAMES+=("$1")
    STEP_STARTED=$SECONDS
    printf '\n==> [%d] %s\n' "${#STEP_NAMES[@]}" "$1"
}

finish_step() {
    if ((${#STEP_NAMES[@]} > ${#STEP_SECONDS[@]})); then
        STEP_SECONDS+=($((SECONDS - STEP_STARTED)))
    fi
}

# Something this machine refused and what is done instead; repeated in the report.
fallback() {
    printf '!!  %s\n' "$1"
    FALLBACKS+=("$1")
}

# Run a probe quietly; on failure print the command and its exact output, and keep the
# output's first line for the report.
attempt() {
    local output
    if output=$("$@" 2>&1); then
        return 0
    fi
    printf '    refused: %s\n' "$*"
    printf '%s\n' "$output" | sed 's/^/      | /'
    REFUSAL=${output%%$'\n'*}
    return 1
}

ensure_tools() {
    step "Tools: buildah, podman, debootstrap, kubectl, the engine's Python"
    [[ $EUID -eq 0 ]] || { echo "run as root: debootstrap and rootful buildah/podman need it" >&2; exit 1; }
    local missing=() tool
    for tool in buildah podman debootstrap; do
        command -v "$tool" >/dev/null || missing+=("$tool")
    done
    if ((${#missing[@]})); then
        echo "installing ${missing[*]} from Debian"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    fi
    command -v kubectl >/dev/null || { echo "kubectl is needed to drive the server" >&2; exit 1; }
    # The embedded server runs from this checkout, with its virtual environment when there is one.
    PYTHON=$ROOT/.venv/bin/python
    [[ -x $PYTHON ]] || PYTHON=python3
    PYTHONPATH=$ROOT "$PYTHON" -c 'import engine.cli' || {
        echo "$PYTHON cannot import the engine: pip install -e . in $ROOT" >&2; exit 1; }
    echo "buildah $(buildah --version | cut -d' ' -f3), podman $(podman --version | cut -d' ' -f3)," \
         "python $("$PYTHON" -c 'import sys; print(sys.version.split()[0])') ($PYTHON)"
}

# Debian's minimal variant plus python3 and its venv module: what the Dockerfile needs.
make_base_rootfs() {
    step "Base root filesystem: debootstrap $SUITE (minbase, python3, python3-venv)"
    local rootfs=$WORK_DIR/base-$SUITE done=$WORK_DIR/base-$SUITE.done
    if [[ $REBUILD_BASE == false && -e $done ]]; then
        echo "reusing $rootfs (--rebuild-base makes it again)"
        return
    fi
    rm -rf "$rootfs" "$done"
    mkdir -p "$WORK_DIR"
    debootstrap --variant=minbase --include=python3,python3-venv "$SUITE" "$rootfs" "$MIRROR"
    # What an image should not carry: package caches and lists, and this machine's
    # hostname and resolver (container runtimes provide both).
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    rm -f "$rootfs/etc/hostname" "$rootfs/etc/resolv.conf"
    touch "$done"
    echo "$rootfs: $(du -sh "$rootfs" | cut -f1)"
}

# A private image store under the work dir: overlay when this machine can mount it, else vfs.
choose_storage() {
    step "Image store: overlay, or vfs where overlay mounts are refused"
    local driver
    for driver in overlay vfs; do
        STORE=(--root "$WORK_DIR/storage-$driver" --runroot "$WORK_DIR/run-$driver"
               --storage-driver "$driver")
        if store_mounts; then
            echo "storage driver $driver, store $WORK_DIR/storage-$driver"
            return
        fi
        fallback "storage driver $driver: $REFUSAL"
    done
    echo "no storage driver works here" >&2
    exit 1
}

# Whether the store can mount a container's root filesystem (what every build step does).
store_mounts() {
    local probe=jobmachine-store-probe works=true
    buildah "${STORE[@]}" rm "$probe" >/dev/null 2>&1 || true
    attempt buildah "${STORE[@]}" from --name "$probe" scratch \
        && attempt buildah "${STORE[@]}" mount "$probe" || works=false
    buildah "${STORE[@]}" rm "$probe" >/dev/null 2>&1 || true
    [[ $works == true ]]
}

import_base_image() {
    step "Base image $BASE_IMAGE from the rootfs"
    if [[ $REBUILD_BASE == false ]] && podman "${STORE[@]}" image exists "$BASE_IMAGE"; then
        echo "reusing $BASE_IMAGE"
        return
    fi
    tar -C "$WORK_DIR/base-$SUITE" -c . | podman "${STORE[@]}" import - "$BASE_IMAGE"
}

# How buildah runs RUN instructions: the default OCI runtime, runc, or chroot isolation.
choose_build_isolation() {
    step "Build isolation: a trial RUN in the base image"
    local container candidate
    container=$(buildah "${STORE[@]}" from "$BASE_IMAGE")
    for candidate in "" "--runtime runc" "--isolation chroot"; do
        read -ra BUILD_OPTS <<<"$candidate"
        [[ $candidate != *runc* ]] || ensure_runc
        if attempt buildah "${STORE[@]}" run "${BUILD_OPTS[@]}" "$container" -- true; then
            echo "RUN works with: buildah ${candidate:-with the default runtime}"
            buildah "${STORE[@]}" rm "$container" >/dev/null
            return
        fi
        fallback "buildah run ${candidate:-with the default runtime}: $REFUSAL"
    done
    buildah "${STORE[@]}" rm "$container" >/dev/null
    echo "buildah cannot run a RUN instruction here" >&2
    exit 1
}

# runc is the fallback runtime where crun refuses this machine's cgroups.
ensure_runc() {
    command -v runc >/dev/null && return
    echo "installing runc from Debian"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq runc
}

build_image() {
    step "Engine image $IMAGE (Dockerfile, BASE_IMAGE=$BASE_IMAGE)"
    local secret=()
    [[ -r $PIP_CERT ]] && secret=(--secret "id=pip-cert,src=$PIP_CERT")
    # Host networking: pip reaches PyPI from inside the build.
    buildah "${STORE[@]}" bud "${BUILD_OPTS[@]}" --layers --network host "${secret[@]}" \
        --build-arg "BASE_IMAGE=$BASE_IMAGE" -t "$IMAGE" -f "$ROOT/Dockerfile" "$ROOT"
    # Earlier builds' untagged images, so that rebuilding does not grow the store.
    podman "${STORE[@]}" image prune -f >/dev/null
}

# A docker-archive loads anywhere without a registry: docker load, kind, ctr, podman load.
save_archive() {
    step "Image archive for machines without a registry"
    local archive=$WORK_DIR/jobmachine-$VERSION.tar
    rm -f "$archive"
    podman "${STORE[@]}" save --format docker-archive -o "$archive" "$IMAGE"
    echo "$archive: $(du -h "$archive" | cut -f1)"
}

# `jobmachine up --no-engine`: the API server (TLS, CRDs, StateMachine objects) and the
# local node; the engine comes from the image.
start_server() {
    step "Embedded API server and local node, no engine"
    RUN_DIR=$(mktemp -d /tmp/jobmachine-image-check.XXXXXX)
    PYTHONPATH=$ROOT "$PYTHON" -m engine.cli up --no-engine --port 0 --quiet \
        --data-dir "$RUN_DIR/data" >"$RUN_DIR/server.log" 2>&1 &
    SERVER_PID=$!
    local deadline=$((SECONDS + 60))
    until grep -q '^jobmachine is up at ' "$RUN_DIR/server.log"; do
        if ! kill -0 "$SERVER_PID" 2>/dev/null || ((SECONDS > deadline)); then
            cat "$RUN_DIR/server.log" >&2
            echo "the server did not come up" >&2
            exit 1
        fi
        sleep 0.5
    done
    SERVER_URL=$(sed -n 's/^jobmachine is up at \(https:[^ ]*\).*/\1/p' "$RUN_DIR/server.log")
    SERVER_PORT=${SERVER_URL##*:}
    export KUBECONFIG=$RUN_DIR/data/kubeconfig KUBECACHEDIR=$RUN_DIR/kube-cache
    echo "server $SERVER_URL, kubeconfig $KUBECONFIG"
}

# The service account's token, made the way a cluster does: RBAC from deploy/, then TokenRequest.
service_account_token() {
    kubectl apply -f "$ROOT/deploy/base/rbac.yaml" >&2
    kubectl create token jobmachine -n "$SYSTEM_NAMESPACE"
}

# The files a pod finds at $SA_MOUNT. The token is written without a trailing newline, as
# the kubelet writes it: the Kubernetes client sends the file's bytes as they are.
write_service_account_files() {
    step "Service account jobmachine in $SYSTEM_NAMESPACE and its files"
    local dir=$RUN_DIR/serviceaccount token
    kubectl create namespace "$SYSTEM_NAMESPACE"
    token=$(service_account_token)
    mkdir -p "$dir"
    printf '%s' "$token" >"$dir/token"
    kubectl config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' \
        | base64 -d >"$dir/ca.crt"
    printf '%s' "$SYSTEM_NAMESPACE" >"$dir/namespace"
    # Readable by uid 65532, as the kubelet's projected volume is for the pod's user.
    chmod 0755 "$dir"
    chmod 0644 "$dir"/*
    ls -l "$dir"
}

# The deployment's arguments, with the metrics port on a free loopback port (host network).
engine_args() {
    METRICS_PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    ENGINE_ARGS=(run --in-cluster "--lease-namespace=$SYSTEM_NAMESPACE"
                 "--metrics-port=$METRICS_PORT" --metrics-address=127.0.0.1)
}

# podman run with the pod's security context and host networking; the first runtime and
# rlimit setting this machine accepts wins (tried on the base image: a refusal costs a second).
choose_podman_run() {
    local runtime limits
    for runtime in "" "--runtime runc"; do
        for limits in "" "${ULIMITS[*]}"; do
            read -ra RUN_OPTS <<<"$runtime $limits"
            [[ $runtime != *runc* ]] || ensure_runc
            if attempt podman "${STORE[@]}" run --rm "${RUN_OPTS[@]}" "${SECURITY[@]}" \
                    --network host "$BASE_IMAGE" true; then
                echo "podman run works with: ${RUN_OPTS[*]:-the defaults}"
                return 0
            fi
            fallback "podman run ${RUN_OPTS[*]:-with the defaults}: $REFUSAL"
        done
    done
    return 1
}

run_engine() {
    step "Engine from the image: uid 65532, read-only root, no capabilities"
    engine_args
    if [[ $RUNNER != chroot ]] && choose_podman_run; then
        run_engine_podman
    elif [[ $RUNNER == podman ]]; then
        echo "podman run is refused here and --runner podman was asked for" >&2
        exit 1
    else
        [[ $RUNNER == chroot ]] || fallback "podman run refused in every way tried: chroot + setpriv instead"
        run_engine_chroot
    fi
}

run_engine_podman() {
    CONTAINER=jobmachine-image-check-$$
    podman "${STORE[@]}" run -d --name "$CONTAINER" "${RUN_OPTS[@]}" "${SECURITY[@]}" \
        --network host -v "$RUN_DIR/serviceaccount:$SA_MOUNT:ro" \
        -e KUBERNETES_SERVICE_HOST=127.0.0.1 -e "KUBERNETES_SERVICE_PORT=$SERVER_PORT" \
        -e "JOBMACHINE_SYSTEM_NAMESPACE=$SYSTEM_NAMESPACE" \
        "$IMAGE" "${ENGINE_ARGS[@]}"
    echo "container $CONTAINER: podman run ${RUN_OPTS[*]} ${SECURITY[*]} --network host"
}

# The image's root filesystem, mounted read-only in a private mount and PID namespace, the
# service-account files bound read-only on a tmpfs /run, and the entrypoint run by setpriv
# as 65532:65532 with no groups, no capabilities and no_new_privs. The network is the
# host's, as with --network host.
run_engine_chroot() {
    local rootfs=$RUN_DIR/rootfs
    local image_root
    image_root=$(podman "${STORE[@]}" image mount "$IMAGE")
    IMAGE_MOUNTED=true
    mkdir -p "$rootfs"
    # shellcheck disable=SC2016  # the inner script expands its own arguments
    unshare --mount --propagation private --pid --kill-child=SIGTERM -- bash -c '
        set -euo pipefail
        image_root=$1 rootfs=$2 sa_dir=$3 sa_mount=$4; shift 4
        mount --bind "$image_root" "$rootfs"
        mount -t proc proc "$rootfs/proc"
        mount --rbind /dev "$rootfs/dev"
        mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$rootfs/run"
        # Resolved inside the image: its /var/run is a symlink to /run.
        target=$rootfs$(chroot "$rootfs" sh -c "mkdir -p $sa_mount && realpath $sa_mount")
        mount --bind "$sa_dir" "$target"
        mount -o remount,bind,ro "$target"
        mount -o remount,bind,ro "$rootfs"
        exec chroot "$rootfs" setpriv --reuid 65532 --regid 65532 --clear-groups \
            --no-new-privs --inh-caps=-all --bounding-set=-all -- "$@"
    ' engine "$image_root" "$rootfs" "$RUN_DIR/serviceaccount" "$SA_MOUNT" \
        env -i PATH=/opt/jobmachine/bin:/usr/bin:/bin HOME=/nonexistent \
        KUBERNETES_SERVICE_HOST=127.0.0.1 "KUBERNETES_SERVICE_PORT=$SERVER_PORT" \
        "JOBMACHINE_SYSTEM_NAMESPACE=$SYSTEM_NAMESPACE" \
        /opt/jobmachine/bin/jobmachine "${ENGINE_ARGS[@]}" >"$RUN_DIR/engine.log" 2>&1 &
    ENGINE_PID=$!
    echo "engine pid $ENGINE_PID: chroot $image_root (read-only) + setpriv --reuid 65532 --regid 65532"
}

engine_running() {
    if [[ -n $CONTAINER ]]; then
        [[ $(podman "${STORE[@]}" inspect -f '{{.State.Running}}' "$CONTAINER") == true ]]
    else
        kill -0 "$ENGINE_PID" 2>/dev/null
    fi
}

engine_logs() {
    if [[ -n $CONTAINER ]]; then
        podman "${STORE[@]}" logs "$CONTAINER" 2>&1
    else
        cat "$RUN_DIR/engine.log"
    fi
}

# /readyz is what the Deployment's readiness probe asks: the engine has synced its caches.
wait_engine_ready() {
    step "Engine ready (/readyz on 127.0.0.1:$METRICS_PORT)"
    local deadline=$((SECONDS + 60))
    until "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
            "http://127.0.0.1:$METRICS_PORT/readyz" 2>/dev/null; do
        if ! engine_running || ((SECONDS > deadline)); then
            engine_logs >&2
            echo "the engine did not become ready" >&2
            exit 1
        fi
        sleep 0.5
    done
    echo "ready"
}

run_job() {
    step "Job ${JOB#*/} (${JOB_MANIFEST#"$ROOT"/}) until Succeeded, at most ${TIMEOUT}s"
    kubectl apply -f "$JOB_MANIFEST"
    local waited=true
    kubectl wait --for=condition=Succeeded --timeout="${TIMEOUT}s" "$JOB" || waited=false
    echo "final conditions:"
    kubectl get "$JOB" -o jsonpath='{range .status.conditions[*]}    {.type}={.status} {.reason}: {.message}{"\n"}{end}'
    kubectl get pods -o wide
    echo "the engine's log:"
    engine_logs | sed 's/^/    /'
    if [[ $waited == false ]]; then
        echo "the job did not succeed within ${TIMEOUT}s" >&2
        exit 1
    fi
    SUCCEEDED=true
}

report() {
    finish_step
    printf '\n==> Report\n'
    local i
    for i in "${!STEP_NAMES[@]}"; do
        printf '  %4ss  %s\n' "${STEP_SECONDS[i]}" "${STEP_NAMES[i]}"
    done
    printf '  image sizes: %s %s, %s %s\n' \
        "$IMAGE" "$(podman "${STORE[@]}" images --format '{{.Size}}' "$IMAGE")" \
        "$BASE_IMAGE" "$(podman "${STORE[@]}" images --format '{{.Size}}' "$BASE_IMAGE")"
    printf '  build RUN steps with: buildah bud %s\n' "${BUILD_OPTS[*]:-(default runtime)}"
    printf '  engine ran with: %s\n' "$([[ -n $CONTAINER ]] && echo "podman run ${RUN_OPTS[*]}" || echo "chroot + setpriv")"
    if ((${#FALLBACKS[@]})); then
        echo "  refused by this machine (exact errors above), worked around:"
        printf '    - %s\n' "${FALLBACKS[@]}"
    fi
    echo "  result: the job succeeded"
}

# Stop what this script started: the engine, the server (and the node's processes), the
# image mount; the run directory is kept when something failed.
cleanup() {
    local status=$?
    if [[ -n $CONTAINER ]]; then
        podman "${STORE[@]}" stop -t 30 "$CONTAINER" >/dev/null 2>&1 || true
        podman "${STORE[@]}" rm -f "$CONTAINER" >/dev/null 2>&1 || true
    fi
    if [[ -n $ENGINE_PID ]]; then
        # unshare ignores SIGTERM while its child runs: signal the engine, its only child.
        pkill -TERM -P "$ENGINE_PID" 2>/dev/null || true
        wait "$ENGINE_PID" 2>/dev/null || true
    fi
    if [[ $IMAGE_MOUNTED == true ]]; then
        podman "${STORE[@]}" image unmount "$IMAGE" >/dev/null 2>&1 || true
    fi
    if [[ -n $SERVER_PID ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [[ -n $RUN_DIR ]]; then
        if [[ $SUCCEEDED == true ]]; then
            rm -rf "$RUN_DIR"
        else
            echo "kept $RUN_DIR (server.log, serviceaccount/, data/) for a look" >&2
        fi
    fi
    exit "$status"
}

main() {
    parse_args "$@"
    trap cleanup EXIT
    trap 'exit 130' INT TERM
    ensure_tools
    make_base_rootfs
    choose_storage
    import_base_image
    choose_build_isolation
    build_image
    save_archive
    start_server
    write_service_account_files
    run_engine
    wait_engine_ready
    run_job
    report
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi

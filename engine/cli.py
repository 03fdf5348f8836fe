"""The `jobmachine` command: parses flags and calls into the packages.

Every command is a thin shell around one function of a package, so that the
same behaviour is reachable from Python and tested there; this module holds no
logic of its own beyond turning results into exit codes.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="jobmachine",
    help="A declarative state-machine job engine for Kubernetes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class Level(StrEnum):
    job = "job"
    replica = "replica"
    all = "all"


class GraphFormat(StrEnum):
    dot = "dot"
    mermaid = "mermaid"
    svg = "svg"
    png = "png"


@app.command()
def validate(
    paths: Annotated[list[Path], typer.Argument(help="Machine files or folders of them.")],
) -> None:
    """Check machine definitions; print FILE:LINE:COL: error|warning: MESSAGE lines."""
    from engine.definition.validate import validate_paths

    diagnostics = validate_paths(paths)
    for diagnostic in diagnostics:
        typer.echo(str(diagnostic))
    errors = sum(1 for d in diagnostics if d.is_error)
    if errors:
        raise typer.Exit(code=1)


@app.command()
def graph(
    file: Annotated[Path, typer.Argument(help="A machine definition file.")],
    level: Annotated[Level, typer.Option(help="Which machine to draw.")] = Level.all,
    output_format: Annotated[
        GraphFormat | None,
        typer.Option("--format", help="Output format (default: from -o's suffix, else dot)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write here instead of stdout.")
    ] = None,
    machine: Annotated[
        str | None,
        typer.Option(help="metadata.name of the definition, when the file holds several."),
    ] = None,
) -> None:
    """Draw a machine definition as Graphviz DOT, Mermaid, SVG or PNG."""
    from engine.graph.render import RenderError, render_file

    fmt = (output_format.value if output_format else None) or _format_from_suffix(output)
    try:
        data = render_file(file, level=level.value, fmt=fmt, machine=machine)
    except RenderError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=1) from exc
    if output is None:
        typer.echo(data.decode(), nl=False)
    else:
        output.write_bytes(data)


def _format_from_suffix(output: Path | None) -> str:
    suffix = output.suffix.lstrip(".").lower() if output else ""
    return (
        {"mmd": "mermaid", "gv": "dot"}.get(suffix, suffix)
        if suffix in {"dot", "gv", "mermaid", "mmd", "svg", "png"}
        else "dot"
    )


@app.command()
def apiserver(
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port; 0 picks a free one.")] = 6443,
    data_dir: Annotated[
        Path | None, typer.Option(help="Persist objects here; memory only when omitted.")
    ] = None,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(help="Where to write the kubeconfig (default DATA_DIR/kubeconfig)."),
    ] = None,
    tls: Annotated[
        bool,
        typer.Option(
            help="Serve HTTPS with a generated CA (the default). Over plain HTTP every request "
            "still needs the token, and kubectl does not send one there: use --no-tls only "
            "with clients that do, such as the Python client."
        ),
    ] = True,
) -> None:
    """Serve the embedded Kubernetes-compatible API server until interrupted."""
    from engine.cluster.apiserver.serve import serve_forever

    serve_forever(host=host, port=port, data_dir=data_dir, kubeconfig=kubeconfig, tls=tls)


manifests_app = typer.Typer(
    help="Write the manifests jobmachine is deployed with.", no_args_is_help=True
)
app.add_typer(manifests_app, name="manifests")


@manifests_app.command("crds")
def manifests_crds(
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Directory to write the CRDs into.")
    ] = Path("crds"),
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 if the directory is stale.")
    ] = False,
) -> None:
    """Write one CustomResourceDefinition per kind, generated from engine/api's models."""
    from engine.api.manifests import stale_crds, write_crds

    if check:
        stale = stale_crds(output)
        for name in stale:
            typer.echo(f"stale: {output / name}", err=True)
        if stale:
            raise typer.Exit(code=1)
        return
    for path in write_crds(output):
        typer.echo(str(path))


if __name__ == "__main__":
    app()

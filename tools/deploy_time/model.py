"""A model of how long `cdk deploy --all` and `cdk destroy --all` take, read from cdk.out.

Resources come from the synthesized templates, their dependencies from ``DependsOn``, ``Ref``,
``Fn::GetAtt``, ``Fn::Sub``, ``Fn::ImportValue`` and ``Fn::GetStackOutput`` (through the producing
stack's exports and outputs), and
from the ``hyperpod-kvcache:needs`` metadata that ``infra.cdk.deps.needs`` writes where one resource
waits for a resource of another stack without referencing it (CloudFormation cannot express that;
CDK turns it into a stack dependency). Durations come from one table, durations.yaml.

Two schedules are computed for each direction:
- *as deployed*: what the CDK CLI does (`--concurrency` high enough): a stack starts when every
  stack it depends on has finished, pays a fixed overhead, then creates its resources as
  CloudFormation does, each as soon as its dependencies in the stack are done;
- *floor*: the same resources, each waiting only for what it needs, wherever that lives, plus one
  stack overhead. No layout of stacks can beat it.
Deletion runs the same graph reversed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infra.environment.layout import NEEDS_METADATA

DURATIONS_FILE = Path(__file__).with_name("durations.yaml")
_SUB_REF = re.compile(r"\$\{([A-Za-z0-9]+)(?:\.[A-Za-z0-9.]+)?\}")

ResourceKey = tuple[str, str]  # (stack name, logical id)


@dataclass
class Resource:
    stack: str
    logical_id: str
    type: str
    properties: dict[str, Any]
    needs: set[ResourceKey] = field(default_factory=set)

    @property
    def key(self) -> ResourceKey:
        return (self.stack, self.logical_id)


@dataclass
class Assembly:
    stacks: dict[str, set[str]]  # stack -> stacks it depends on
    resources: dict[ResourceKey, Resource]


def _refs(value: Any) -> Iterator[tuple[str, str]]:
    """("local"|"import", name) for every reference in a template value."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((fn, arg),) = value.items()
            if fn == "Ref" and isinstance(arg, str):
                yield "local", arg
            elif fn == "Fn::GetAtt":
                name = arg[0] if isinstance(arg, list) else str(arg).split(".")[0]
                yield "local", name
            elif fn == "Fn::ImportValue" and isinstance(arg, str):
                yield "import", arg
            elif fn == "Fn::GetStackOutput" and isinstance(arg, dict):  # a weak reference
                yield "output", f"{arg.get('StackName')}:{arg.get('OutputName')}"
            elif fn == "Fn::Sub":
                text = arg[0] if isinstance(arg, list) else arg
                for name in _SUB_REF.findall(text):
                    yield "local", name
        for item in value.values():
            yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def load_assembly(outdir: Path) -> Assembly:
    manifest = json.loads((outdir / "manifest.json").read_text())
    stacks: dict[str, set[str]] = {}
    templates: dict[str, dict[str, Any]] = {}
    for name, artifact in manifest["artifacts"].items():
        if artifact["type"] != "aws:cloudformation:stack":
            continue
        templates[name] = json.loads((outdir / artifact["properties"]["templateFile"]).read_text())
        stacks[name] = set(artifact.get("dependencies") or [])
    for name in stacks:
        stacks[name] &= set(stacks)  # asset manifests are not stacks
    # What each export (strong reference) and each output (weak reference) reads.
    exports: dict[str, set[ResourceKey]] = {}
    for name, template in templates.items():
        stack_name = manifest["artifacts"][name]["properties"].get("stackName", name)
        for output_name, output in template.get("Outputs", {}).items():
            reads = {(name, r) for kind, r in _refs(output["Value"]) if kind == "local"}
            exports[f"{stack_name}:{output_name}"] = reads
            export = output.get("Export", {}).get("Name")
            if isinstance(export, str):
                exports[export] = reads
    resources: dict[ResourceKey, Resource] = {}
    for name, template in templates.items():
        local = template.get("Resources", {})
        for logical_id, body in local.items():
            res = Resource(name, logical_id, body["Type"], body.get("Properties", {}))
            depends = body.get("DependsOn", [])
            for dep in [depends] if isinstance(depends, str) else depends:
                res.needs.add((name, dep))
            for kind, ref in _refs(body.get("Properties", {})):
                if kind == "local" and ref in local:
                    res.needs.add((name, ref))
                elif kind in ("import", "output"):
                    res.needs |= exports.get(ref, set())
            for item in body.get("Metadata", {}).get(NEEDS_METADATA, []):
                res.needs.add((item["stack"], item["logicalId"]))
            res.needs.discard(res.key)
            resources[res.key] = res
    return Assembly(stacks, resources)


@dataclass(frozen=True)
class Durations:
    overhead: float
    default: dict[str, float]
    types: dict[str, dict[str, float]]
    overrides: list[dict[str, Any]]

    @classmethod
    def load(cls, path: Path = DURATIONS_FILE) -> Durations:
        data = yaml.safe_load(path.read_text())
        return cls(
            float(data["stack_overhead_minutes"]),
            data["default"],
            data.get("types", {}),
            data.get("overrides", []),
        )

    def minutes(self, resource: Resource, phase: str) -> float:
        for rule in self.overrides:
            if (
                rule["type"] == resource.type
                and resource.properties.get(rule["property"]) == rule["equals"]
            ):
                return float(rule[phase])
        return float(self.types.get(resource.type, self.default)[phase])


@dataclass(frozen=True)
class Span:
    key: ResourceKey
    type: str
    start: float
    end: float
    after: ResourceKey | None  # what it waited for last (None: nothing, it started at once)


@dataclass
class Schedule:
    spans: list[Span]
    stacks: dict[str, tuple[float, float]]

    @property
    def minutes(self) -> float:
        return max((s.end for s in self.spans), default=0.0)

    def critical_path(self) -> list[Span]:
        """The chain of waits that ends last: each resource and what it waited for."""
        by_key = {s.key: s for s in self.spans}
        path = [max(self.spans, key=lambda s: s.end)] if self.spans else []
        while path[0].after is not None:
            path.insert(0, by_key[path[0].after])
        return path


def _order(assembly: Assembly, reverse: bool) -> dict[ResourceKey, set[ResourceKey]]:
    """resource -> what must finish before it starts (deletion: its dependents)."""
    waits: dict[ResourceKey, set[ResourceKey]] = {k: set() for k in assembly.resources}
    for key, res in assembly.resources.items():
        for need in res.needs:
            if need not in waits:
                continue
            if reverse:
                waits[need].add(key)
            else:
                waits[key].add(need)
    return waits


def _spans(
    assembly: Assembly,
    durations: Durations,
    phase: str,
    waits: dict[ResourceKey, set[ResourceKey]],
    ready: dict[ResourceKey, tuple[float, ResourceKey | None]],
) -> list[Span]:
    """Each resource starts when it is ready and everything it waits for has ended."""
    done: dict[ResourceKey, Span] = {}

    def visit(key: ResourceKey, trail: tuple[ResourceKey, ...] = ()) -> Span:
        if key in done:
            return done[key]
        if key in trail:
            raise ValueError(f"dependency cycle through {key[0]}/{key[1]}")
        start, after = ready[key]
        for dep in sorted(waits[key]):
            end = visit(dep, (*trail, key)).end
            if end > start:
                start, after = end, dep
        res = assembly.resources[key]
        done[key] = Span(key, res.type, start, start + durations.minutes(res, phase), after)
        return done[key]

    return [visit(key) for key in assembly.resources]


def _before(assembly: Assembly, stack: str, reverse: bool) -> set[str]:
    """Stacks that must finish first: its dependencies (deploy) or its dependents (destroy)."""
    if reverse:
        return {s for s, deps in assembly.stacks.items() if stack in deps}
    return assembly.stacks[stack]


def _stack_order(assembly: Assembly, reverse: bool) -> list[str]:
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        for dep in sorted(_before(assembly, name, reverse)):
            visit(dep)
        order.append(name)

    for name in sorted(assembly.stacks):
        visit(name)
    return order


def as_deployed(assembly: Assembly, durations: Durations, phase: str = "create") -> Schedule:
    """Stacks as units: each starts after the stacks before it, then CloudFormation's own order."""
    reverse = phase == "delete"
    waits = _order(assembly, reverse)
    stacks: dict[str, tuple[float, float]] = {}
    last: dict[str, Span | None] = {}
    spans: list[Span] = []
    for name in _stack_order(assembly, reverse):
        start, after = 0.0, None
        for other in _before(assembly, name, reverse):
            if stacks[other][1] > start:
                start, prev = stacks[other][1], last[other]
                after = prev.key if prev else None
        local = {k for k in assembly.resources if k[0] == name}
        ready = dict.fromkeys(local, (start + durations.overhead, after))
        sub = Assembly({name: set()}, {k: assembly.resources[k] for k in local})
        own = _spans(sub, durations, phase, {k: waits[k] & local for k in local}, ready)
        tail = max(own, key=lambda s: s.end, default=None)
        last[name] = tail
        stacks[name] = (start, tail.end if tail else start + durations.overhead)
        spans += own
    return Schedule(spans, stacks)


def floor(assembly: Assembly, durations: Durations, phase: str = "create") -> Schedule:
    """Every resource waits only for what it needs; one stack overhead up front."""
    waits = _order(assembly, phase == "delete")
    no_wait: tuple[float, ResourceKey | None] = (durations.overhead, None)
    spans = _spans(assembly, durations, phase, waits, dict.fromkeys(assembly.resources, no_wait))
    stacks = {
        name: (
            min(s.start for s in spans if s.key[0] == name),
            max(s.end for s in spans if s.key[0] == name),
        )
        for name in assembly.stacks
        if any(s.key[0] == name for s in spans)
    }
    return Schedule(spans, stacks)


def plot_gantt(schedules: dict[str, Schedule], path: Path) -> Path:
    """One row per stack (its span) and its critical-path resources, per schedule."""
    # Imported when a plot is drawn: matplotlib.pyplot takes ~0.5 s to import, about as long as
    # the rest of the CLI's start-up, and most commands draw nothing.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(schedules), 1, figsize=(10, 3 + 2 * len(schedules)))
    for ax, (title, sched) in zip(
        axes if len(schedules) > 1 else [axes], schedules.items(), strict=True
    ):
        rows = sorted(sched.stacks.items(), key=lambda kv: kv[1][0])
        for i, (name, (start, end)) in enumerate(rows):
            ax.barh(i, end - start, left=start, color="lightsteelblue")
            for span in sched.critical_path():
                if span.key[0] == name:
                    ax.barh(i, span.end - span.start, left=span.start, color="indianred")
        ax.set_yticks(range(len(rows)), [name for name, _ in rows])
        ax.set_xlabel("minutes (red: critical path)")
        ax.set_title(f"{title}: {sched.minutes:.1f} min")
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def measured_minutes(events: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """logical id -> {"create"|"delete": minutes} from one stack's DescribeStackEvents (newest
    first, as the API returns them): the last IN_PROGRESS -> COMPLETE pair of each."""
    started: dict[tuple[str, str], Any] = {}
    out: dict[str, dict[str, float]] = {}
    for event in sorted(events, key=lambda e: e["Timestamp"]):
        status = str(event.get("ResourceStatus", ""))
        phase = (
            "create"
            if status.startswith("CREATE")
            else "delete"
            if status.startswith("DELETE")
            else None
        )
        if phase is None or event.get("ResourceType") == "AWS::CloudFormation::Stack":
            continue
        key = (event["LogicalResourceId"], phase)
        if status.endswith("_IN_PROGRESS") and key not in started:
            started[key] = event["Timestamp"]
        elif status.endswith("_COMPLETE") and key in started:
            seconds = (event["Timestamp"] - started.pop(key)).total_seconds()
            out.setdefault(key[0], {})[phase] = seconds / 60
    return out


def report(outdir: Path, durations: Durations, png: Path | None = None) -> dict[str, Any]:
    """The model's figures for one cloud assembly (what `make deploy-plan` prints)."""
    assembly = load_assembly(outdir)
    result: dict[str, Any] = {}
    schedules: dict[str, Schedule] = {}
    for phase, verb in (("create", "deploy"), ("delete", "destroy")):
        deployed, best = as_deployed(assembly, durations, phase), floor(assembly, durations, phase)
        schedules[f"cdk {verb} --all (as deployed)"] = deployed
        schedules[f"cdk {verb} --all (floor)"] = best
        result[verb] = {
            "as_deployed_minutes": round(deployed.minutes, 1),
            "floor_minutes": round(best.minutes, 1),
            "ratio": round(deployed.minutes / best.minutes, 3) if best.minutes else None,
            "stacks": {k: [round(a, 1), round(b, 1)] for k, (a, b) in deployed.stacks.items()},
            "critical_path": [
                {
                    "stack": s.key[0],
                    "resource": s.key[1],
                    "type": s.type,
                    "start": round(s.start, 1),
                    "end": round(s.end, 1),
                }
                for s in deployed.critical_path()
            ],
        }
    if png is not None:
        result["gantt"] = str(plot_gantt(schedules, png))
    return result


@dataclass(frozen=True)
class MeasuredRow:
    stack: str
    logical_id: str
    type: str
    phase: str
    assumed: float
    measured: float


def measured_rows(
    cloudformation: Any, stacks: list[str], durations: Durations, outdir: Path | None = None
) -> list[MeasuredRow]:
    """Each resource's measured create/delete minutes from the stacks' events, beside the table's
    value (properties, for the table's overrides, come from cdk.out when it is there)."""
    properties: dict[ResourceKey, dict[str, Any]] = {}
    if outdir is not None and (outdir / "manifest.json").is_file():
        properties = {k: r.properties for k, r in load_assembly(outdir).resources.items()}
    rows: list[MeasuredRow] = []
    for stack in stacks:
        pages = cloudformation.get_paginator("describe_stack_events").paginate(StackName=stack)
        events = [e for page in pages for e in page["StackEvents"]]
        types = {e["LogicalResourceId"]: e.get("ResourceType", "") for e in events}
        for logical_id, phases in sorted(measured_minutes(events).items()):
            res = Resource(
                stack, logical_id, types[logical_id], properties.get((stack, logical_id), {})
            )
            for phase, minutes in sorted(phases.items()):
                assumed = durations.minutes(res, phase)
                rows.append(MeasuredRow(stack, logical_id, res.type, phase, assumed, minutes))
    return rows

"""dbt's commands through a `type: hiveopt` session profile on a small project of its own:
debug, seed, run, test, show, run-operation hiveopt_analyze; per-model switches, verify mode,
and the one warning of a fallback."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import sqlglot
from helpers.dbt_run import Events, run_dbt

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT

pytestmark = pytest.mark.integration

JOIN = """
select p.name, o.amount
from {{ ref('orders') }} o
join {{ ref('people') }} p on p.id = o.person_id
where p.country = 'NL'
"""

FILES = {
    "dbt_project.yml": """
        name: commands
        version: "1.0"
        config-version: 2
        profile: commands
        models:
          commands:
            +materialized: table
        """,
    "seeds/people.csv": "id,name,country\n1,ann,NL\n2,bob,DE\n3,cas,NL\n,nobody,NL\n3,dup,NL\n",
    "seeds/orders.csv": "order_id,person_id,amount\n10,1,5.0\n11,1,7.5\n12,2,1.0\n13,3,2.0\n14,,9.0\n15,3,2.0\n",
    "models/joined.sql": JOIN,
    "models/switched_off.sql": "{{ config(hiveopt={'enabled': false}) }}\n" + JOIN,
    "models/rule_off.sql": "{{ config(hiveopt={'rules': {'select_join_algorithms': false}}) }}\n" + JOIN,
    "models/verified.sql": "{{ config(hiveopt={'verify': true}) }}\n" + JOIN,
    "models/unaliased.sql": (
        "select count(*) from {{ ref('people') }} p join {{ ref('orders') }} o on o.person_id = p.id"
    ),
    # Unaliased too, but no rule rewrites it: Spark runs it as written and is never asked for names.
    "models/unaliased_unchanged.sql": (
        "{{ config(hiveopt={'rules': {'select_join_algorithms': false}}) }}\n"
        "select count(*), max(o.amount) from {{ ref('people') }} p join {{ ref('orders') }} o on o.person_id = p.id"
    ),
    # No join, no subquery: no rule could rewrite it, so the optimizer does not even look.
    "models/one_table.sql": "select count(*) from {{ ref('people') }}",
    "models/schema.yml": """
        version: 2
        models:
          - name: joined
            columns:
              - name: name
                data_tests: [not_null]
        """,
}


@pytest.fixture(scope="module")
def project(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("commands")
    for path, text in FILES.items():
        os.makedirs(os.path.dirname(root / path), exist_ok=True)
        (root / path).write_text(textwrap.dedent(text).lstrip())
    (root / "profiles.yml").write_text(
        textwrap.dedent("""
        commands:
          target: dev
          outputs:
            dev:
              type: hiveopt
              method: session
              schema: commands
              optimizer:
                broadcast_threshold_bytes: 1048576
                # The seeds are tiny: Spark would broadcast them by itself and the rule would write
                # no hint. Told Spark broadcasts nothing, the join gets its hint, as a big one would.
                spark_broadcast_threshold_bytes: -1
                # Models are built again and again here: each build runs the rewrite (no
                # alternating with the SQL as written, which test_statistics_store covers).
                feedback: "off"
                stats:
                  schema: hiveopt_commands
        """)
    )
    return root


def dbt(project, *args, events=None):
    return run_dbt([*args, "--project-dir", str(project), "--profiles-dir", str(project)], events)


def record(project, name):
    with open(project / "target" / "hiveopt" / f"{name}.json") as handle:
        return json.load(handle)


def test_debug(project):
    assert dbt(project, "debug").success


def test_seed_run_test_show(project, spark):
    assert dbt(project, "seed").success
    events = Events()
    run = dbt(project, "run", events=events)
    assert run.success
    assert record(project, "joined")["fired_rules"] == ["select_join_algorithms"]
    assert record(project, "verified")["fired_rules"] == ["select_join_algorithms"]
    off = record(project, "switched_off")  # no optimizer at all; the record says so and holds the SQL that ran
    assert off["switched_off"] and off["fallback_reason"] == "optimizer switched off" and off["rules"] == []
    assert record(project, "rule_off")["fired_rules"] == []
    runs = {r["rule"]: r for r in record(project, "rule_off")["rules"]}
    assert runs["select_join_algorithms"]["enabled"] is False and runs["reorder_joins"]["enabled"] is True
    # The unaliased output keeps the name Spark gives it (DESCRIBE QUERY): optimized, the same column.
    assert not events.matching("hiveopt adapter: unaliased: not optimized")
    unaliased = record(project, "unaliased")
    assert unaliased["fired_rules"] == ["select_join_algorithms"] and "AS `count(1)`" in unaliased["optimized_sql"]
    assert spark.sql("SELECT * FROM commands.unaliased").columns == ["count(1)"]
    unchanged = record(project, "unaliased_unchanged")
    assert unchanged["fired_rules"] == [] and unchanged["fallback_reason"] is None
    assert spark.sql("SELECT * FROM commands.unaliased_unchanged").columns == ["count(1)", "max(amount)"]
    described = events.matching("DESCRIBE QUERY")
    assert described and not [m for m in described if "max(o.amount)" in m.lower()], described
    expected = spark.sql("SELECT count(*) FROM commands.people p JOIN commands.orders o ON o.person_id = p.id")
    assert spark.table("commands.unaliased").collect() == expected.collect()
    one_table = record(project, "one_table")
    assert one_table["unchanged_reason"] == "no join or subquery" and not events.matching("one_table: not optimized")
    # Same rows whatever the optimizer did (NULL keys and duplicate keys in the seeds).
    for name in ("switched_off", "rule_off", "verified"):
        assert sorted(spark.table(f"commands.{name}").collect()) == sorted(spark.table("commands.joined").collect())
    assert dbt(project, "test").success
    show = dbt(project, "show", "--select", "joined")
    assert show.success


def test_run_operation_analyze(project):
    events = Events()
    result = dbt(
        project,
        "run-operation",
        "hiveopt_analyze",
        "--args",
        "{models: [people], relations: [commands.orders]}",
        events=events,
    )
    assert result.success
    assert events.matching("hiveopt: analyzed commands.people: 5 rows")
    assert events.matching("hiveopt: analyzed commands.orders: 6 rows")


def test_analyze_command(project):
    from dbt.adapters.hiveopt.cli import main

    assert (
        main(["analyze", "joined", "commands.people", "--project-dir", str(project), "--profiles-dir", str(project)])
        == 0
    )


def test_verify_catches_a_wrong_rewrite(project, monkeypatch):
    """A deliberately wrong rule: verify mode fails the model and shows both SQL texts."""
    from dbt.adapters.hiveopt.optimizer import pipeline
    from dbt.adapters.hiveopt.optimizer.rule import Rule

    def wrong(expression, log):
        expression.set("where", None)  # drops the filter: different results
        log.fired("dropped the filter")
        return expression

    monkeypatch.setattr(pipeline, "RULES", (Rule("select_join_algorithms", wrong, why_here="a wrong rule"),))
    result = dbt(project, "run", "--select", "verified")
    assert not result.success
    message = result.result.results[0].message
    assert "hiveopt verify: verified" in message and "-- original:" in message and "-- optimized:" in message


def test_explain_command(project, capsys):
    from dbt.adapters.hiveopt.cli import main

    assert main(["explain", "joined", "--project-dir", str(project)]) == 0
    out = capsys.readouterr().out
    assert "BROADCAST" in out and "+ broadcast p" in out
    # The join tree as written (no hint: Spark chooses) and as rewritten (the hint on p), with
    # estimated rows for people, not Python dicts.
    written = out.split("root, as written:\n")[1].split("\n\n")[0]
    chosen = out.split("root, as rewritten:\n")[1].split("\n\n")[0]
    assert "join inner on " in written and "no hint: Spark chooses at run time" in written, written
    assert "; BROADCAST p" in chosen and "  scan p (commands.people): " in chosen and " rows, " in chosen, chosen
    assert "{'precision'" not in out and "precision':" not in out
    # Spark's actual rows of the build, next to the estimates, with the q-error.
    assert "(actual " in chosen and "q-error" in chosen, chosen
    assert "worst q-error of the estimates against Spark's actual rows: " in out
    # The SQL before is what dbt compiled, as it wrote it.
    compiled = (project / "target" / "compiled" / "commands" / "models" / "joined.sql").read_text().strip()
    assert "-- before (the SQL dbt compiled)\n" + compiled in out
    # The SQL after is the record's (the text Spark ran, on one line) laid out a clause per line.
    record = json.loads((project / "target" / "hiveopt" / "joined.json").read_text())
    after = out.split("-- after (the SQL Spark ran, laid out)\n")[1].split("\n\n-- ")[0]
    assert "\nFROM " in after and "\n" not in record["optimized_sql"].strip(), after

    def one_line(sql):
        return sqlglot.transpile(sql, read=DIALECT, write=DIALECT)[0]

    assert one_line(after) == one_line(record["optimized_sql"]), after


def test_explain_into_a_closed_pipe_ends_quietly(project):
    script = os.path.join(os.path.dirname(sys.executable), "hiveopt")
    done = subprocess.run(
        f"{script} explain joined --project-dir {project} | head -1", shell=True, capture_output=True, text=True
    )
    assert done.stdout.startswith("model joined: rewritten") and "Traceback" not in done.stderr, done.stderr


def test_summary_shows_the_last_invocation_only(project, capsys):
    from dbt.adapters.hiveopt.cli import main

    assert dbt(project, "run", "--select", "joined").success
    assert main(["summary", "--project-dir", str(project)]) == 0
    out = capsys.readouterr().out
    out = out[out.index("model  ") :]  # after dbt's own log lines
    models = [line.split()[0] for line in out.splitlines()[1:] if line and not line.startswith(("(", "statistics"))]
    assert models == ["joined"], out
    assert "records of earlier dbt invocations not shown)" in out


def test_debug_names_a_bad_optimizer_setting(tmp_path):
    """A bad profile setting is a clear error at `dbt debug`, naming the setting."""
    (tmp_path / "dbt_project.yml").write_text("name: bad\nversion: '1.0'\nconfig-version: 2\nprofile: bad\n")
    (tmp_path / "profiles.yml").write_text(
        textwrap.dedent("""
        bad:
          target: dev
          outputs:
            dev:
              type: hiveopt
              method: session
              schema: bad
              optimizer:
                task_slots: 0
                rules: {reorder: false}
        """)
    )
    events = Events()
    assert not run_dbt(["debug", "--project-dir", str(tmp_path), "--profiles-dir", str(tmp_path)], events).success
    text = "\n".join(events.messages)
    assert "task_slots: 0 is outside 1..inf" in text and "unknown rule 'reorder'" in text


def test_the_html_report_in_a_real_browser(project, tmp_path):
    """target/hiveopt/index.html and a page per model, opened from the file system by headless
    Chromium (Debian's package; the Makefile installs it): the model page's DOM holds both join
    trees as SVG, and a screenshot of it is taken."""
    assert dbt(project, "run", "--select", "joined").success
    folder = project / "target" / "hiveopt"
    index = (folder / "index.html").read_text()
    assert 'href="joined.html"' in index and "<td>select_join_algorithms</td>" in index
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: `make test` installs Debian's package"
    page = f"file://{folder / 'joined.html'}"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={tmp_path}"]
    dom = subprocess.run([chromium, *flags, "--dump-dom", page], capture_output=True, text=True, timeout=120).stdout
    assert dom.count('<svg class="join-tree"') == 2, dom[:2000]  # as written, and as rewritten
    assert "root, as written" in dom and "root, as rewritten" in dom
    assert "scan p (commands.people)" in dom and "BROADCAST p" in dom
    shot = tmp_path / "joined.png"
    subprocess.run(
        [chromium, *flags, "--window-size=1200,1400", f"--screenshot={shot}", page], capture_output=True, timeout=120
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, len(data)

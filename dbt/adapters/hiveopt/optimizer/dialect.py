"""The SQL dialect the optimizer reads and writes: sqlglot's Spark dialect, corrected where its
reading of a text differs from Spark's own.

Spark 4 reads two quotes inside a string as one quote ('it''s' is "it's"); sqlglot's Spark
tokenizer reads them as two adjacent literals and writes CONCAT('it', 's'), which is "its".

>>> import sqlglot
>>> sqlglot.parse_one("SELECT 'it''s' AS a, 'it' 's' AS b", read=HiveoptSpark).sql(HiveoptSpark)
"SELECT 'it\\\\'s' AS a, CONCAT('it', 's') AS b"

A sample with a seed is written as Spark reads it:

>>> sqlglot.parse_one("SELECT * FROM t TABLESAMPLE (10 PERCENT) REPEATABLE (7)", read=HiveoptSpark).sql(HiveoptSpark)
'SELECT * FROM t TABLESAMPLE (10 PERCENT) REPEATABLE (7)'
"""

import sqlglot
from sqlglot.dialects.spark import Spark


class HiveoptSpark(Spark):
    class Tokenizer(Spark.Tokenizer):
        STRING_ESCAPES = ["\\", "'"]

    def generator(self, **opts):
        # Spark reads `TABLESAMPLE (10 PERCENT) REPEATABLE (42)`; sqlglot writes SEED (42), which
        # Spark rejects. Set on the instance: with sqlglotc (sqlglot's compiled build) a Python
        # class cannot subclass the compiled generators.
        generator = super().generator(**opts)
        generator.TABLESAMPLE_SEED_KEYWORD = "REPEATABLE"
        return generator


DIALECT = HiveoptSpark


def formatted(sql: str) -> str:
    """The SQL laid out one clause per line, for people to read (`hiveopt explain`, the HTML
    report); the text as it was when it does not parse. The text Spark runs is not formatted:
    whitespace is all that would change.

    >>> print(formatted("SELECT a, SUM(b) AS s FROM t JOIN u ON t.k = u.k GROUP BY a"))
    SELECT
      a,
      SUM(b) AS s
    FROM t
    JOIN u
      ON t.k = u.k
    GROUP BY
      a
    >>> formatted("not sql at all (")
    'not sql at all ('
    """
    try:
        return sqlglot.transpile(sql, read=DIALECT, write=DIALECT, pretty=True)[0]
    except Exception:  # a text sqlglot cannot read is shown as it is
        return sql

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

from sqlglot.dialects.spark import Spark


class HiveoptSpark(Spark):
    class Tokenizer(Spark.Tokenizer):
        STRING_ESCAPES = ["\\", "'"]

    class Generator(Spark.Generator):
        # Spark reads `TABLESAMPLE (10 PERCENT) REPEATABLE (42)`; sqlglot writes SEED (42), which
        # Spark rejects.
        TABLESAMPLE_SEED_KEYWORD = "REPEATABLE"


DIALECT = HiveoptSpark

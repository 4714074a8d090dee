"""More dbt-tests-adapter classes: incremental variants, seeds, caching, aliases, concurrency,
query comments, stored test failures, unit-test types and the cross-database utility macros (whose
models exercise the optimizer on many SQL shapes).

Left out because they fail on plain dbt-spark here as well (they need dbt-spark's own fixture
overrides: Postgres types such as TEXT, dropped columns, different expected values):
IncrementalOnSchemaChange, BasicSeedTests, CachingLowercaseModel, CachingUppercaseModel, Aliases,
SameAliasDifferentSchemas, UnitTestingTypes, DateDiff, Listagg, Replace, Right, SplitPart,
GetIntervalsBetween. Run with HIVEOPT_FUNCTIONAL_TYPE=spark to compare."""

import pytest
from dbt.tests.adapter.concurrency.test_concurrency import BaseConcurrency
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch
from dbt.tests.adapter.query_comment.test_query_comment import BaseQueryComments
from dbt.tests.adapter.relations.test_changing_relation_type import BaseChangeRelationTypeValidator
from dbt.tests.adapter.store_test_failures_tests.test_store_test_failures import BaseStoreTestFailures
from dbt.tests.adapter.utils.test_any_value import BaseAnyValue
from dbt.tests.adapter.utils.test_bool_or import BaseBoolOr
from dbt.tests.adapter.utils.test_cast import BaseCast
from dbt.tests.adapter.utils.test_concat import BaseConcat
from dbt.tests.adapter.utils.test_date_spine import BaseDateSpine
from dbt.tests.adapter.utils.test_date_trunc import BaseDateTrunc
from dbt.tests.adapter.utils.test_dateadd import BaseDateAdd
from dbt.tests.adapter.utils.test_equals import BaseEquals
from dbt.tests.adapter.utils.test_escape_single_quotes import BaseEscapeSingleQuotesBackslash
from dbt.tests.adapter.utils.test_except import BaseExcept
from dbt.tests.adapter.utils.test_generate_series import BaseGenerateSeries
from dbt.tests.adapter.utils.test_get_powers_of_two import BaseGetPowersOfTwo
from dbt.tests.adapter.utils.test_hash import BaseHash
from dbt.tests.adapter.utils.test_intersect import BaseIntersect
from dbt.tests.adapter.utils.test_last_day import BaseLastDay
from dbt.tests.adapter.utils.test_length import BaseLength
from dbt.tests.adapter.utils.test_null_compare import BaseMixedNullCompare, BaseNullCompare
from dbt.tests.adapter.utils.test_position import BasePosition
from dbt.tests.adapter.utils.test_safe_cast import BaseSafeCast
from dbt.tests.adapter.utils.test_string_literal import BaseStringLiteral

pytestmark = pytest.mark.integration


class TestMicrobatch(BaseMicrobatch):
    """dbt-spark's microbatch needs a day-grain partition column (as in dbt-spark's own suite)."""

    @pytest.fixture(scope="class")
    def microbatch_model_sql(self) -> str:
        return """
{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='event_time',
          batch_size='day', begin=modules.datetime.datetime(2020, 1, 1, 0, 0, 0),
          partition_by=['date_day'], file_format='parquet') }}
select *, cast(event_time as date) as date_day
from {{ ref('input_model') }}
"""


class TestQueryComments(BaseQueryComments):
    pass


class TestStoreTestFailures(BaseStoreTestFailures):
    pass


class TestConcurrency(BaseConcurrency):
    pass


class TestChangeRelationTypeValidator(BaseChangeRelationTypeValidator):
    pass


class TestAnyValue(BaseAnyValue):
    pass


class TestBoolOr(BaseBoolOr):
    pass


class TestCast(BaseCast):
    pass


class TestConcat(BaseConcat):
    pass


class TestDateAdd(BaseDateAdd):
    pass


class TestDateTrunc(BaseDateTrunc):
    pass


class TestEquals(BaseEquals):
    pass


class TestEscapeSingleQuotesBackslash(BaseEscapeSingleQuotesBackslash):
    pass


class TestExcept(BaseExcept):
    pass


class TestGenerateSeries(BaseGenerateSeries):
    pass


class TestHash(BaseHash):
    pass


class TestIntersect(BaseIntersect):
    pass


class TestLastDay(BaseLastDay):
    pass


class TestLength(BaseLength):
    pass


class TestMixedNullCompare(BaseMixedNullCompare):
    pass


class TestNullCompare(BaseNullCompare):
    pass


class TestPosition(BasePosition):
    pass


class TestSafeCast(BaseSafeCast):
    pass


class TestStringLiteral(BaseStringLiteral):
    pass


class TestDateSpine(BaseDateSpine):
    pass


class TestGetPowersOfTwo(BaseGetPowersOfTwo):
    pass

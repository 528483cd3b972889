"""dbt-tests-adapter's basic suites, run with ``type: hudi`` (dbt-spark's materializations)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection
from dbt.tests.adapter.incremental.test_incremental_unique_id import (
    BaseIncrementalUniqueKey,
    SubBaseIncrementalUniqueKey,
)

pytestmark = [pytest.mark.dbt, pytest.mark.spark]


class TestSimpleMaterializationsHudi(BaseSimpleMaterializations):
    pass


class TestSingularTestsHudi(BaseSingularTests):
    pass


class TestSingularTestsEphemeralHudi(BaseSingularTestsEphemeral):
    pass


class TestEmptyHudi(BaseEmpty):
    pass


class TestEphemeralHudi(BaseEphemeral):
    pass


class TestIncrementalHudi(BaseIncremental):
    pass


class TestGenericTestsHudi(BaseGenericTests):
    pass


class TestAdapterMethodHudi(BaseAdapterMethod):
    pass


class TestValidateConnectionHudi(BaseValidateConnection):
    pass


class TestIncrementalUniqueKeyFileFormatHudi(SubBaseIncrementalUniqueKey):
    """dbt's unique-key scenarios on dbt-spark's ``file_format='hudi'`` + ``merge`` models.

    The scenarios that fit Hudi's merge: a string key and a three-column key, each overwriting
    the stored row. Left out: models without a key (Hudi's MERGE INTO needs a record key, so
    ``merge`` without one is refused) and a key column missing from the model on an incremental
    run (refused here on the first run already, where the suite expects that run to pass).
    """

    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        hudi_merge = {"+file_format": "hudi", "+incremental_strategy": "merge"}
        return {
            "models": {
                "test": {"str_unique_key": hudi_merge, "trinary_unique_key_list": hudi_merge}
            }
        }

    @pytest.fixture(scope="class", autouse=True)
    def legacy_store_assignment(self, spark: Any) -> Iterator[None]:
        """The suite's seed updates insert date strings into a date column, which Spark 4's
        ANSI store assignment refuses (on any table format); they need Spark 3's policy."""
        key = "spark.sql.storeAssignmentPolicy"
        before = spark.conf.get(key)
        spark.conf.set(key, "LEGACY")
        yield
        spark.conf.set(key, before)

    test__one_unique_key = BaseIncrementalUniqueKey.test__one_unique_key
    test__trinary_unique_key_list = BaseIncrementalUniqueKey.test__trinary_unique_key_list

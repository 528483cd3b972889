"""dbt-tests-adapter's basic suites, run with ``type: hudi`` (dbt-spark's materializations)."""

from __future__ import annotations

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

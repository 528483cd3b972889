"""The bucket index's hashing against Java's own (``BucketIdentifier.getBucketId``, release-0.14).

The oracle is the JDK: a small Java program compiled at test time computes
``(java.util.List.hashCode(hashKeys) & Integer.MAX_VALUE) % numBuckets`` with the hash keys
``BucketIdentifier.getHashKeys`` takes (the key itself without ':', else the hash fields' values
of ``f1:v1,f2:v2``). Without a JDK the pinned values below, computed by that program, are
checked alone.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from engine.errors import RecordKeyError
from engine.write.bucket_index import (
    bucket_file_id,
    bucket_id,
    bucket_ids,
    bucket_of_file_id,
    java_list_hash,
    java_string_hash,
)

# (record key, hash fields, num buckets) -> bucket, as the JDK computes it
PINNED = {
    ("k000000000", ("id",), 4): 0,
    ("k000000001", ("id",), 4): 1,
    ("k000123456", ("id",), 16): 7,
    ("id1", ("uuid",), 4): 1,
    ("", ("id",), 4): 3,
    ("héllo wörld", ("id",), 7): 0,
    ("日本語キー", ("id",), 10): 7,
    ("emoji-😀", ("id",), 5): 2,
    ("a:1,b:2", ("a", "b"), 8): 2,
    ("a:1,b:2", ("b",), 8): 1,
    ("a:x:y,b:2", ("a",), 3): 1,
    ("x:1", ("id",), 4): 3,
}

JAVA_ORACLE = """
import java.util.*;
public class BucketOracle {
  static List<String> hashKeys(String recordKey, List<String> fields) {
    if (!recordKey.contains(":")) return Collections.singletonList(recordKey);
    Map<String, String> pairs = new HashMap<>();
    for (String p : recordKey.split(",")) { String[] kv = p.split(":"); pairs.put(kv[0], kv[1]); }
    List<String> out = new ArrayList<>();
    for (String f : fields) out.add(pairs.get(f));
    return out;
  }
  public static void main(String[] args) throws Exception {
    Scanner in = new Scanner(System.in, "UTF-8");
    while (in.hasNextLine()) {
      String[] cols = in.nextLine().split("\\t", -1);
      List<String> fields = Arrays.asList(cols[1].split(","));
      int n = Integer.parseInt(cols[2]);
      List<String> keys = hashKeys(cols[0], fields);
      System.out.println((keys.hashCode() & Integer.MAX_VALUE) % n);
    }
  }
}
"""


def _java_buckets(tmp: Path, cases: list[tuple[str, tuple[str, ...], int]]) -> list[int]:
    (tmp / "BucketOracle.java").write_text(JAVA_ORACLE)
    subprocess.run(["javac", "-encoding", "UTF-8", "BucketOracle.java"], cwd=tmp, check=True)
    lines = "".join(f"{k}\t{','.join(f)}\t{n}\n" for k, f, n in cases)
    out = subprocess.run(
        ["java", "-Dfile.encoding=UTF-8", "-cp", str(tmp), "BucketOracle"],
        input=lines.encode(),
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [int(x) for x in out.split()]


def test_pinned_buckets_match_java_hashing() -> None:
    for (key, fields, n), expected in PINNED.items():
        assert bucket_id(key, fields, n) == expected, key


@pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK to compute the oracle with")
def test_buckets_equal_the_jdk(tmp_path: Path) -> None:
    keys = [f"k{i:09d}" for i in range(0, 5000, 7)] + ["ü-ß", "𝄞x", "a b", "Z" * 60]
    cases = [(k, ("id",), n) for k in keys for n in (1, 4, 13)]
    cases += list(PINNED)
    java = _java_buckets(tmp_path, cases)
    ours = [bucket_id(k, f, n) for k, f, n in cases]
    assert ours == java
    assert [PINNED[c] for c in PINNED] == java[-len(PINNED) :]
    # the vectorised path (ASCII keys) agrees with the scalar one
    for n in (4, 13):
        vector = bucket_ids(pa.array(keys), ("id",), n).to_pylist()
        assert vector == [bucket_id(k, ("id",), n) for k in keys]


def test_java_hash_primitives() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648  # Integer.MIN_VALUE
    assert java_list_hash([]) == 1
    assert java_list_hash([None]) == 31
    assert java_list_hash(["a", "b"]) == (31 * (31 + 97) + 98)


def test_mixed_batches_take_the_scalar_path() -> None:
    keys = pa.array(["k1", "é", "a:1,b:2"])
    assert bucket_ids(keys, ("a",), 8).to_pylist() == [
        bucket_id(k, ("a",), 8) for k in keys.to_pylist()
    ]


def test_malformed_complex_key_is_refused() -> None:
    with pytest.raises(RecordKeyError, match="field:value"):
        bucket_id("a:1,b", ("a",), 4)


def test_file_ids_carry_the_bucket() -> None:
    file_id = bucket_file_id(3)
    assert file_id.startswith("00000003-") and file_id.endswith("-0")
    assert len(file_id) == 38  # a uuid (36) and "-0"
    assert bucket_of_file_id(file_id) == 3
    assert bucket_of_file_id("3f2a9c1e-aaaa-bbbb-cccc-dddddddddddd-0") is None


def test_a_task_splits_its_records_by_partition_and_bucket_in_arrival_order() -> None:
    from engine.spark.bucket_write import _BUCKET_COLUMN
    from engine.write.grouping import groups_in_arrival_order

    def _by_bucket(table: pa.Table) -> Iterator[tuple[str, int, pa.Table]]:
        return groups_in_arrival_order(table, "_hoodie_partition_path", _BUCKET_COLUMN)

    table = pa.table(
        {
            "_hoodie_partition_path": ["b", "a", "b", "a", "a", "b"],
            _BUCKET_COLUMN: pa.array([1, 0, 0, 0, 1, 1], pa.int32()),
            "v": [1, 2, 3, 4, 5, 6],
        }
    )
    groups = [(p, b, t.column("v").to_pylist()) for p, b, t in _by_bucket(table)]
    assert groups == [("a", 0, [2, 4]), ("a", 1, [5]), ("b", 0, [3]), ("b", 1, [1, 6])]
    assert all(_BUCKET_COLUMN not in t.column_names for _, _, t in _by_bucket(table))

"""Known data files: sha256 checksums and canonical download URLs.

`KNOWN_FILES` maps every file of the staged data layout (paths relative to
the data directory, always with forward slashes) to a `KnownFile` record with
the file's sha256 and, where the exact bytes are published, the URL it can be
downloaded from. The hashes are those of the files exactly as stored (for
gzip files, of the compressed bytes).

Files without a URL:

- `glove/glove.6B.50d.subset.txt.gz` was derived for this project and is not
  published anywhere.
- `multi30k/tok/*.gz` are gzipped copies of uncompressed files in the
  Multi30k repository, so the published bytes differ from the stored ones.
- `snli/jsonl/snli_1.0_train_first100000.jsonl.gz` is the first 100,000
  lines of the official training file, taken from a source archive and
  gzipped here; those bytes are published nowhere.
- `vectors/spacy_en_core_web_md_3.8.0.300d.txt.gz` holds spaCy's
  `en_core_web_md` 3.8.0 vectors written in the GloVe text format for the
  staged datasets' words (not GloVe); derived, not published.
"""

import collections

KnownFile = collections.namedtuple("KnownFile", ["sha256", "url"])
KnownFile.__doc__ = """A known data file.

Attributes:
    sha256: Hex sha256 digest of the file as stored.
    url: Canonical download URL of exactly these bytes, or `None`.
"""

MULTI30K_COMMIT = "a3d2e0d26b56f3846f66a952536ffed4e401d05a"
SICK_COMMIT = "e1d3375f5b3bc24f21aa4e46f96eb379e9fc1081"
SNLI_JSONL_COMMIT = "80492a7aebcdcac21e758514c8af403d77e8594a"
SNLI_INFERSENT_COMMIT = "1891d20833a1b4d2c1b41ee891066d74c68381af"

_GITHUB = "https://raw.githubusercontent.com/"
MULTI30K_RAW_URL = (
    f"{_GITHUB}multi30k/dataset/{MULTI30K_COMMIT}/data/task1/raw/"
)
SICK_URL = f"{_GITHUB}brmson/dataset-sts/{SICK_COMMIT}/data/sts/sick2014/"
SNLI_JSONL_URL = f"{_GITHUB}uclnlp/inferbeddings/{SNLI_JSONL_COMMIT}/data/snli/"
SNLI_INFERSENT_URL = (
    f"{_GITHUB}kolchinski/NLI_2018/{SNLI_INFERSENT_COMMIT}/static/snli_1.0/"
)

KNOWN_FILES = {
    "glove/glove.6B.50d.subset.txt.gz": KnownFile(
        "a65d623bb1d634622ddef68bda5c10df21879f35b4a53d6a14627fde8480d2ec",
        None,
    ),
    "multi30k/raw/test_2016_flickr.de.gz": KnownFile(
        "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
        MULTI30K_RAW_URL + "test_2016_flickr.de.gz",
    ),
    "multi30k/raw/test_2016_flickr.en.gz": KnownFile(
        "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
        MULTI30K_RAW_URL + "test_2016_flickr.en.gz",
    ),
    "multi30k/raw/test_2017_flickr.de.gz": KnownFile(
        "a2c89666db00c495cd8513b9d708d5a3acc205d7de312ef2bf5fb7ebc1540aee",
        MULTI30K_RAW_URL + "test_2017_flickr.de.gz",
    ),
    "multi30k/raw/test_2017_flickr.en.gz": KnownFile(
        "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074",
        MULTI30K_RAW_URL + "test_2017_flickr.en.gz",
    ),
    "multi30k/raw/train.de.gz": KnownFile(
        "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
        MULTI30K_RAW_URL + "train.de.gz",
    ),
    "multi30k/raw/train.en.gz": KnownFile(
        "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
        MULTI30K_RAW_URL + "train.en.gz",
    ),
    "multi30k/raw/val.de.gz": KnownFile(
        "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
        MULTI30K_RAW_URL + "val.de.gz",
    ),
    "multi30k/raw/val.en.gz": KnownFile(
        "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
        MULTI30K_RAW_URL + "val.en.gz",
    ),
    "multi30k/tok/test_2016_flickr.lc.norm.tok.de.gz": KnownFile(
        "2628844bbb7783afa0ba8a9927f174aafeee715871aa8deed3af2c4d0b71a658",
        None,
    ),
    "multi30k/tok/test_2016_flickr.lc.norm.tok.en.gz": KnownFile(
        "b95df925929cb222d0cf733f153bcbfba0f00180c85fd61dd5c4fb27f29ee394",
        None,
    ),
    "multi30k/tok/test_2017_flickr.lc.norm.tok.de.gz": KnownFile(
        "aa48934689a0fac1f506d19878ef9f48d823b2f1655bd3db5018f533cc0b2111",
        None,
    ),
    "multi30k/tok/test_2017_flickr.lc.norm.tok.en.gz": KnownFile(
        "6f015edf8eea8e5bff43d65e1743b2572577756b671a203651ccce508e787c35",
        None,
    ),
    "multi30k/tok/train.lc.norm.tok.de.gz": KnownFile(
        "7e3392f03c0fe978165d22fb5eaf0d0b9b1d9c413283b5193f02d4cb27e50797",
        None,
    ),
    "multi30k/tok/train.lc.norm.tok.en.gz": KnownFile(
        "79d990dd71713faec0e3165cbd3b60acdf6fe11cab2e37a28f374c6bdbb297ec",
        None,
    ),
    "multi30k/tok/val.lc.norm.tok.de.gz": KnownFile(
        "006ad58fd6a2ad6502094160fe5273d93abf34a207967fdc69eafd7558b5ef39",
        None,
    ),
    "multi30k/tok/val.lc.norm.tok.en.gz": KnownFile(
        "2c7e5e9cf54ba0dff0cc4b84836d5a583f80ecaaab90b37a123d1376306215cd",
        None,
    ),
    "sick/SICK_test_annotated.txt": KnownFile(
        "2b8aa806658d6fc23c6824c83776c2d4fee7556000817b5ec0f982861413b7d0",
        SICK_URL + "SICK_test_annotated.txt",
    ),
    "sick/SICK_train.txt": KnownFile(
        "266cf8047149bd1d68138dd30439f3122bff30069740ac6705bb6197d9f1b48e",
        SICK_URL + "SICK_train.txt",
    ),
    "sick/SICK_trial.txt": KnownFile(
        "5a88cfb62f8c6bd2a3cce0f2421ba2cb8c2be5ab4a800f6f01e2c64aafb7db56",
        SICK_URL + "SICK_trial.txt",
    ),
    "sick/readme.txt": KnownFile(
        "4ff14a2b07603f2214c2803a6e012048c795be5ba4e5d1d33b87d7210f633bf7",
        SICK_URL + "readme.txt",
    ),
    "snli/README_snli_1.0.txt": KnownFile(
        "a27e78bf4ba7bc26033fac15a6596dd41c7ff47b4909e739199c59f91cf1bd4e",
        SNLI_INFERSENT_URL + "README.txt",
    ),
    "snli/infersent_tok/dev.labels": KnownFile(
        "d164d72435c3289fe53cb01e983f7c06e104bf192c0cae9caf2e99bf2e15f974",
        SNLI_INFERSENT_URL + "dev.labels",
    ),
    "snli/infersent_tok/dev.s1": KnownFile(
        "28a398b5478b10b4b851d4bb5b2e5767171519add6586015ed50b9436df11d00",
        SNLI_INFERSENT_URL + "dev.s1",
    ),
    "snli/infersent_tok/dev.s2": KnownFile(
        "a8c59709630b64ba103f7784c0cb7104a6baf23234562487264d9634714f5d2b",
        SNLI_INFERSENT_URL + "dev.s2",
    ),
    "snli/infersent_tok/test.labels": KnownFile(
        "e25c363e5cc70d5494d6e6555d8053eced22dca836e0f03067530eaad3d4f5f5",
        SNLI_INFERSENT_URL + "test.labels",
    ),
    "snli/infersent_tok/test.s1": KnownFile(
        "62cb8107dc3c56a4376e5e521842be24e0d61c92c346b94917da2bbf2a47d8be",
        SNLI_INFERSENT_URL + "test.s1",
    ),
    "snli/infersent_tok/test.s2": KnownFile(
        "1174f3ad30a3c30fc0f9eeffc1b3b6a79e0514026c5a658968a8e2a324b311a1",
        SNLI_INFERSENT_URL + "test.s2",
    ),
    "snli/infersent_tok/train_small.labels": KnownFile(
        "daf37a4aeeceb28d994dd151950e8c17e8f67108d63719656aa6035e3a445908",
        SNLI_INFERSENT_URL + "train_small.labels",
    ),
    "snli/infersent_tok/train_small.s1": KnownFile(
        "cff1c6b0c5d901ff6303896719b225db64ab48a79a8836251ed227618bc9c552",
        SNLI_INFERSENT_URL + "train_small.s1",
    ),
    "snli/infersent_tok/train_small.s2": KnownFile(
        "84c0155cdc253b91cca7e2476fe8d9c17e4d361df4625049e0f8740082968897",
        SNLI_INFERSENT_URL + "train_small.s2",
    ),
    "snli/jsonl/snli_1.0_dev.jsonl.gz": KnownFile(
        "e5cfcc71b4846c40e06bae364a13312adeb434884e9a7cedf67037bdd212e39d",
        SNLI_JSONL_URL + "snli_1.0_dev.jsonl.gz",
    ),
    "snli/jsonl/snli_1.0_test.jsonl.gz": KnownFile(
        "ef5f0721f18e6aafd80f0d67aa2ef9784277aa08ba6a582c03fc381367282ac5",
        SNLI_JSONL_URL + "snli_1.0_test.jsonl.gz",
    ),
    "snli/jsonl/snli_1.0_train_first1024.jsonl.gz": KnownFile(
        "fe589c9b787721e24aeacf3dc35deb8c1a185d885ea07df11455f41f1ab9a5d9",
        SNLI_JSONL_URL + "tiny/1024.jsonl.gz",
    ),
    "snli/jsonl/snli_1.0_train_first100000.jsonl.gz": KnownFile(
        "e1f30f42ab2b514c51c53a48693c5f335c92e13606f28690b16ce75d3a67beed",
        None,
    ),
    "vectors/spacy_en_core_web_md_3.8.0.300d.txt.gz": KnownFile(
        "7ce22c1c12ce7a050961ef593f93eb763e3fda5dfa1a3014ca271d96d5313b31",
        None,
    ),
}

"""Offline language identification over en/de/fr/zh."""

from nmtscale.engine.langid import detect


def test_detect_the_four_languages_and_unknown():
    texts = [
        "The file could not be opened because it is locked.",
        "Die Datei konnte nicht geöffnet werden, weil sie gesperrt ist.",
        "Le fichier n'a pas pu être ouvert car il est verrouillé.",
        "无法打开该文件，因为它已被锁定。",
        "",
    ]
    assert detect(texts) == ["en", "de", "fr", "zh", "unknown"]

//! `PROTOCOLS.md` is the registry's table as `rampart dpi protocols --markdown` prints it: a
//! detector added or changed without regenerating the file fails here. Regenerate with
//! `RAMPART_BLESS=1 cargo test -p rampart-dpi --test protocols_doc`.

#[test]
fn protocols_md_is_generated_from_the_registry() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("PROTOCOLS.md");
    let want = rampart_dpi::protocols_markdown();
    if std::env::var_os("RAMPART_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is out of date: run RAMPART_BLESS=1 cargo test -p rampart-dpi --test protocols_doc",
        path.display()
    );
}

#[test]
fn every_protocol_has_evidence_and_a_source() {
    let rows = rampart_dpi::protocols();
    assert!(rows.len() >= 100, "{} protocols", rows.len());
    for r in &rows {
        assert!(!r.evidence.is_empty() && !r.source.is_empty(), "{}", r.name);
    }
}

//! The benches' inputs (`ikp::bench_support`) are what they claim to be.
use ikp::bench_support::native_attention;
use ikp::device::sample;

#[test]
fn native_attention_decodes_to_the_schedule() {
    let words = native_attention(4, 3).unwrap();
    let t = ikp::host::decode::decode(&words, &Default::default()).unwrap();
    assert_eq!(t.lanes.len(), 12);
    assert!(t.lanes.iter().all(|l| l.finalized && l.dropped == 0));
    let begins: usize = (0..4)
        .flat_map(|b| sample::block_schedule(b, 3))
        .flat_map(|l| l.2)
        .filter(|e| matches!(e, sample::Ev::B(..)))
        .count();
    assert_eq!(t.spans.len(), begins);
    assert_eq!(t.diagnostics, Default::default());
}

#[test]
fn tvm_named_decodes_with_the_sample_names_and_links() {
    let (words, opts) = ikp::bench_support::tvm_named(4, 3);
    let t = ikp::host::decode::decode(&words, &opts).unwrap();
    assert_eq!(t.source.format, ikp::host::WireFormat::Tvm);
    assert_eq!(t.lanes.len(), 12);
    assert_eq!(t.names.regions, sample::REGIONS);
    let links = ikp::host::analysis::links::links(&t);
    assert!(!links.is_empty(), "the sample's waits link to its signals");
    for l in &links {
        let wait = t.names.region(t.spans.region[l.to_span]);
        assert!(wait.starts_with("wait."), "{wait}");
        assert_eq!(t.lane(l.from_lane).unwrap().block, l.block);
    }
}

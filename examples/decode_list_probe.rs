use descheduler::snapshot::decode::stream::{ListDecoder, ObjectType};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let piece: usize = std::env::args().nth(2).map_or(8192, |s| s.parse().unwrap());
    let bytes = std::fs::read(&path).unwrap();
    let t = std::time::Instant::now();
    let mut d = ListDecoder::new("probe", ObjectType { kind: "Pod", api_version: "v1" });
    for c in bytes.chunks(piece) { d.push(c).unwrap(); }
    let l = d.finish().unwrap();
    eprintln!("stream: {} pods {} nodes in {:?}", l.parts.pods.len(), l.parts.nodes.len(), t.elapsed());
    let t = std::time::Instant::now();
    let s = descheduler::snapshot::decode::load_bytes("f", &bytes).unwrap();
    eprintln!("file: {} pods in {:?}", s.pods.len(), t.elapsed());
}

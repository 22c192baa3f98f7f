fn main() {
    let spec =
        &pktvec::perf::topologies()[std::env::args().nth(1).map_or(0, |s| s.parse().unwrap())];
    let mut g = pktvec::perf::build(spec).unwrap();
    for _ in 0..200_000 {
        g.run_once();
    }
}

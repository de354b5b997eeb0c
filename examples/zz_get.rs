use std::time::Instant;
fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let files = eywa::index::HandoffFiles::new(&std::path::Path::new(&dir).join("store/index"));
    let t = Instant::now();
    let index = files.load().unwrap();
    println!("load {:?} ({} handoffs)", t.elapsed(), index.len());
    let today = chrono::Local::now().date_naive();
    let opts = eywa::retrieve::GetOptions::default();
    for q in [
        "project-12 kw3 kw77",
        "kw1 kw2",
        "refactor project-400 kw999",
        "kw5000 kw12",
        "project-7",
        "",
    ] {
        let mut times = vec![];
        for i in 0..200 {
            let q2 = format!("{q} zq{i}");
            let t = Instant::now();
            let r = index.get(&q2, &opts, today);
            times.push(t.elapsed());
            assert!(r.hits.len() <= 3);
        }
        times.sort();
        println!("{q:30} p50 {:?} max {:?}", times[100], times[199]);
    }
}

fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let files = eywa::index::HandoffFiles::new(&std::path::Path::new(&dir).join("store/index"));
    let index = files.load().unwrap();
    let today = chrono::Local::now().date_naive();
    let opts = eywa::retrieve::GetOptions::default();
    for i in 0..3000 {
        let q2 = format!("kw1 kw2 zq{i}");
        let r = index.get(&q2, &opts, today);
        assert!(r.hits.len() <= 3);
    }
}

//! Adding documents, in MB of files a second: a folder of markdown files and one of PDFs
//! (written with lopdf, text on every page), each added to a fresh store, in process
//! (`Engine::add_documents`) and as a person runs it (`eywa docs add DIR` in a fresh
//! process). Then the same folder again: every file unchanged, nothing written.
//!
//! Then one file at a time, growing (issue 30): markdown of 5, 25 and 50 MB and PDFs of
//! 250, 500 and 1,000 pages, each with `eywa docs add FILE` in a fresh process, its time
//! and the peak resident memory of it and the PDF reader it starts (time must grow in
//! step with size, memory stay under 500 MB); and a 1.5 MB Flate bomb that inflates to
//! 1.5 GiB, which must be refused under 200 MB.
//!
//! ```sh
//! cargo bench --bench docs_add            # all of it
//! cargo bench --bench docs_add -- single  # the growing files and the bomb only
//! ```

mod fixture;
mod scale;

#[allow(dead_code)]
#[path = "../tests/support/fuzz.rs"]
mod fuzz;

use std::path::{Path, PathBuf};
use std::time::Instant;

use eywa::engine::{Engine, EngineConfig};
use lopdf::content::{Content, Operation};
use lopdf::{Document, Object, Stream, dictionary};

/// Bump to write the folders again.
const FOLDER_VERSION: u32 = 1;
const MD_FILES: usize = 400;
const PDF_FILES: usize = 60;
const PDF_PAGES: usize = 20;
const PDF_LINES: usize = 45;

fn main() {
    let only_single = std::env::args().any(|a| a == "single");
    if !only_single {
        folders();
    }
    single_files();
}

fn folders() {
    for (kind, folder) in [("md", md_folder()), ("pdf", pdf_folder())] {
        let bytes = scale::dir_bytes(&folder);
        let mb = bytes as f64 / 1e6;
        let files = std::fs::read_dir(&folder)
            .unwrap()
            .filter(|e| {
                !e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with('.')
            })
            .count();
        // In process.
        let data = tempfile::tempdir().unwrap();
        let engine = Engine::open(EngineConfig::new(
            data.path().join("eywa"),
            scale::empty_claude_dir(),
        ))
        .unwrap();
        let started = Instant::now();
        let outcomes = engine
            .add_documents(std::slice::from_ref(&folder), None)
            .unwrap();
        let took = started.elapsed();
        assert!(outcomes.iter().all(|o| o.result.is_ok()));
        let again = Instant::now();
        engine
            .add_documents(std::slice::from_ref(&folder), None)
            .unwrap();
        let unchanged = again.elapsed();
        drop(engine);
        println!(
            "docs_add/{kind}/in-process: {files} files, {mb:.1} MB in {:.2?} = {:.1} MB/s; again (unchanged) {:.2?}",
            took,
            mb / took.as_secs_f64(),
            unchanged
        );
        // The CLI, in a fresh process on a fresh store.
        let data = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let out = scale::eywa()
            .arg("--data-dir")
            .arg(data.path().join("eywa"))
            .arg("--claude-dir")
            .arg(scale::empty_claude_dir())
            .args(["docs", "add", "--json"])
            .arg(&folder)
            .output()
            .unwrap();
        let took = started.elapsed();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        println!(
            "docs_add/{kind}/cli: {files} files, {mb:.1} MB in {:.2?} = {:.1} MB/s",
            took,
            mb / took.as_secs_f64()
        );
    }
}

fn bench_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("target/bench-data/{name}-v{FOLDER_VERSION}"))
}

/// Prose of `words` words from a skewed vocabulary, in sentences.
fn prose(rng: &mut fixture::Rng, words: usize) -> String {
    let mut out = String::new();
    for i in 0..words {
        out.push_str(&fixture::word(rng.skewed(20_000)));
        out.push(if i % 14 == 13 { '.' } else { ' ' });
        if i % 14 == 13 {
            out.push(' ');
        }
    }
    out
}

/// Markdown files of 10 to 80 KB: headings, paragraphs, a code block now and then.
fn md_folder() -> PathBuf {
    let dir = bench_dir("docs-md");
    if dir.join(".done").exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = fixture::Rng::new(11);
    for f in 0..MD_FILES {
        let mut text = format!("# Notes {f}\n\n");
        let target = 10_000 + rng.below(70_000) as usize;
        let mut section = 0;
        while text.len() < target {
            section += 1;
            text.push_str(&format!("## Part {section}\n\n"));
            for _ in 0..3 {
                let words = 40 + rng.below(80) as usize;
                text.push_str(&prose(&mut rng, words));
                text.push_str("\n\n");
            }
            if section % 4 == 0 {
                text.push_str("```rust\nfn main() { println!(\"hello\"); }\n```\n\n");
            }
        }
        std::fs::write(dir.join(format!("notes-{f:04}.md")), text).unwrap();
    }
    std::fs::write(dir.join(".done"), b"").unwrap();
    dir
}

/// PDFs of 20 pages, 45 lines of text a page.
fn pdf_folder() -> PathBuf {
    let dir = bench_dir("docs-pdf");
    if dir.join(".done").exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = fixture::Rng::new(12);
    for f in 0..PDF_FILES {
        let pages: Vec<Vec<String>> = (0..PDF_PAGES)
            .map(|_| (0..PDF_LINES).map(|_| prose(&mut rng, 12)).collect())
            .collect();
        write_pdf(&pages, &dir.join(format!("report-{f:03}.pdf")));
    }
    std::fs::write(dir.join(".done"), b"").unwrap();
    dir
}

fn write_pdf(pages: &[Vec<String>], path: &Path) {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding",
    });
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let mut kids: Vec<Object> = Vec::new();
    for lines in pages {
        let mut operations = vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 10.into()]),
            Operation::new("TL", vec![14.into()]),
            Operation::new("Td", vec![50.into(), 750.into()]),
        ];
        for line in lines {
            operations.push(Operation::new(
                "Tj",
                vec![Object::string_literal(line.as_str())],
            ));
            operations.push(Operation::new("T*", vec![]));
        }
        operations.push(Operation::new("ET", vec![]));
        let content = Content { operations };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
        });
        kids.push(page_id.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count, "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    doc.compress();
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// `eywa docs add FILE` in a fresh process on a fresh store: whether it added the file,
/// how long it took, and the peak resident memory of it and of the processes it waited
/// for (its PDF reader), in MiB.
fn add_one(file: &Path) -> (bool, std::time::Duration, f64) {
    let data = tempfile::tempdir().unwrap();
    let started = Instant::now();
    // Waited for with wait4 below, for its resource usage.
    #[allow(clippy::zombie_processes)]
    let child = scale::eywa()
        .arg("--data-dir")
        .arg(data.path().join("eywa"))
        .arg("--claude-dir")
        .arg(scale::empty_claude_dir())
        .args(["docs", "add", "--json"])
        .arg(file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, filling the two out-parameters.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let took = started.elapsed();
    // ru_maxrss of a waited child covers the descendants it waited for (Linux: KiB).
    let added = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (added, took, usage.ru_maxrss as f64 / 1024.0)
}

/// Files that grow, and the bomb (see the module's comment).
fn single_files() {
    for mb in [5, 25, 50] {
        let file = md_file(mb);
        let (added, took, rss) = add_one(&file);
        assert!(added, "{}", file.display());
        let size = std::fs::metadata(&file).unwrap().len() as f64 / 1e6;
        println!(
            "docs_add/single/md-{mb}MB: {size:.1} MB in {took:.2?} = {:.1} MB/s, peak RSS {rss:.0} MiB",
            size / took.as_secs_f64()
        );
    }
    for pages in [250, 500, 1_000] {
        let file = pdf_file(pages);
        let (added, took, rss) = add_one(&file);
        assert!(added, "{}", file.display());
        println!(
            "docs_add/single/pdf-{pages}p: {pages} pages in {took:.2?} = {:.0} pages/s, peak RSS {rss:.0} MiB",
            pages as f64 / took.as_secs_f64()
        );
    }
    let bomb = bomb_file();
    let (added, took, rss) = add_one(&bomb);
    assert!(!added, "the bomb was added");
    println!("docs_add/single/flate-bomb: refused in {took:.2?}, peak RSS {rss:.0} MiB");
}

/// One markdown file of about `mb` MB of prose under headings.
fn md_file(mb: usize) -> PathBuf {
    let path = bench_dir("docs-single").join(format!("notes-{mb}mb.md"));
    if path.exists() {
        return path;
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut rng = fixture::Rng::new(13);
    let mut text = String::with_capacity(mb << 20);
    let mut section = 0;
    while text.len() < mb * 1_000_000 {
        section += 1;
        text.push_str(&format!("## Part {section}\n\n"));
        text.push_str(&prose(&mut rng, 400));
        text.push_str("\n\n");
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// One PDF of `pages` pages, 45 lines of text each.
fn pdf_file(pages: usize) -> PathBuf {
    let path = bench_dir("docs-single").join(format!("report-{pages}p.pdf"));
    if path.exists() {
        return path;
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut rng = fixture::Rng::new(14);
    let text: Vec<Vec<String>> = (0..pages)
        .map(|_| (0..PDF_LINES).map(|_| prose(&mut rng, 12)).collect())
        .collect();
    write_pdf(&text, &path);
    path
}

/// A one-page PDF whose 1.5 MB content stream inflates to 1.5 GiB of spaces.
fn bomb_file() -> PathBuf {
    use std::io::Write;
    let path = bench_dir("docs-single").join("flate-bomb.pdf");
    if path.exists() {
        return path;
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(b"BT /F1 12 Tf 72 720 Td (bomb) Tj ET\n")
        .unwrap();
    let spaces = vec![b' '; 16 << 20];
    for _ in 0..96 {
        z.write_all(&spaces).unwrap();
    }
    let stream = z.finish().unwrap();
    let out = fuzz::pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>".to_vec(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        fuzz::stream("/Filter /FlateDecode", &stream),
    ]);
    std::fs::write(&path, out).unwrap();
    path
}

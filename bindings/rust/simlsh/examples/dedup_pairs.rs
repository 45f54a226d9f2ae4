//! Prints what `simlsh-dedup --output pairs [--threshold T] DIR...` prints:
//! the "dedup" preset, documents in the tool's walk order (depth first,
//! names in byte order), pairs verified by estimate, TSV with 4 decimals.
use simlsh::*;
use std::path::PathBuf;

fn walk(path: PathBuf, out: &mut Vec<PathBuf>) {
    let meta = std::fs::symlink_metadata(&path).expect("stat");
    if meta.is_dir() {
        let mut names: Vec<_> = std::fs::read_dir(&path)
            .expect("readdir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        names.sort(); // OsString orders by bytes on Unix
        for n in names {
            walk(path.join(n), out);
        }
    } else if std::fs::metadata(&path).map(|m| m.is_file()).unwrap_or(false) {
        out.push(path);
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\t', "\\t")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
        .replace('\0', "\\0")
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut p = Params::preset("dedup")?;
    if args.len() >= 2 && args[0] == "--threshold" {
        p.set_double(PARAM_THRESHOLD, args[1].parse()?)?;
        args.drain(..2);
    }
    let mut files = Vec::new();
    for a in args {
        walk(PathBuf::from(a), &mut files);
    }
    let mut ix = Index::new(&p)?;
    let texts = files.iter().map(std::fs::read).collect::<std::io::Result<Vec<_>>>()?;
    let slices: Vec<&[u8]> = texts.iter().map(|t| t.as_slice()).collect();
    // One call signs them all, one inserts them; empty documents are
    // skipped, as by the tool.
    let mut values = Vec::new();
    let empty = p.sign_batch(&slices, 0, &mut values)?;
    let np = values.len() / files.len().max(1);
    let keep: Vec<usize> = (0..files.len()).filter(|&i| !empty[i]).collect();
    let rows: Vec<u32> = keep.iter().flat_map(|&i| values[i * np..(i + 1) * np].to_vec()).collect();
    let ids: Vec<u64> = keep.iter().map(|&i| i as u64).collect();
    ix.insert_values(&ids, &rows, 0)?;
    let mut out = String::new();
    for r in ix.pairs(QUERY_VERIFY, 10_000_000)? {
        let name = |i: u64| escape(&files[i as usize].to_string_lossy());
        out += &format!("{}\t{}\t{:.4}\n", name(r.a), name(r.b), r.score);
    }
    print!("{out}");
    Ok(())
}

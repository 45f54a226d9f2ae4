//! Prints what `simlsh-dedup [--threshold T] [--verify MODE] PATH...` prints
//! (`--output clusters`, the default) through the Rust binding and the
//! library's dedup engine: the "dedup" preset, documents in the tool's walk
//! order (depth first, names in byte order), star groups from the index's
//! buckets, and in exact mode (the default) the texts re-read from their
//! files a batch at a time, as the engine asks for them.
//! `--output pairs --verify estimate` prints the tool's pairs instead (TSV,
//! scores with 4 decimals).
//!
//! dedup [--threshold T] [--verify exact|estimate|none] [--output clusters|pairs]
//!       [-j THREADS] [--memory BYTES] PATH...
//!
//! --memory bounds the text one batch of the pull loop asks for (the tool's
//! --verify-memory); the groups do not depend on it.
use simlsh::*;
use std::path::PathBuf;

type Res<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn walk(path: PathBuf, out: &mut Vec<PathBuf>) -> Res<()> {
    if std::fs::symlink_metadata(&path)?.is_dir() {
        let mut names = std::fs::read_dir(&path)?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<std::io::Result<Vec<_>>>()?;
        names.sort(); // OsString orders by bytes on Unix
        for n in names {
            walk(path.join(n), out)?;
        }
    } else if std::fs::metadata(&path).map(|m| m.is_file()).unwrap_or(false) {
        out.push(path);
    }
    Ok(())
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\t', "\\t")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
        .replace('\0', "\\0")
}

/// simlsh-dedup's params for these options, banding included: the
/// library's dedup policy (simlsh_dedup_banding) chooses it for the mode.
fn params(threshold: Option<f64>, mode: DedupMode) -> Res<Params> {
    let mut p = Params::preset("dedup")?;
    if let Some(t) = threshold {
        p.set_double(PARAM_THRESHOLD, t)?;
    }
    dedup_banding(&mut p, mode, 0.99, 0, 0)?;
    Ok(p)
}

fn main() -> Res<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let (mut threshold, mut mode, mut threads, mut pairs) = (None, DedupMode::Exact, 1u32, false);
    let mut memory = None;
    while args.len() >= 2 && args[0].starts_with('-') {
        match args[0].as_str() {
            "--threshold" => threshold = Some(args[1].parse()?),
            "--verify" => {
                mode = match args[1].as_str() {
                    "exact" => DedupMode::Exact,
                    "estimate" => DedupMode::Estimate,
                    "none" => DedupMode::None,
                    v => return Err(format!("--verify: exact, estimate or none, not {v:?}").into()),
                }
            }
            "--output" => {
                pairs = args[1] == "pairs";
                if !pairs && args[1] != "clusters" {
                    return Err(format!("--output: clusters or pairs, not {:?}", args[1]).into());
                }
            }
            "-j" => threads = args[1].parse()?,
            "--memory" => memory = Some(args[1].parse()?),
            o => return Err(format!("unknown option {o}").into()),
        }
        args.drain(..2);
    }
    if pairs && mode != DedupMode::Estimate {
        return Err("--output pairs needs --verify estimate".into());
    }
    let p = params(threshold, mode)?;
    let mut files = Vec::new();
    for a in args {
        walk(PathBuf::from(a), &mut files)?;
    }
    // Sign a chunk of files at a time and keep no text: the engine asks for
    // the texts it needs later. Documents with nothing to shingle are
    // skipped, as by the tool.
    let mut ix = Index::new(&p)?;
    let (mut ids, mut sizes, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for (c, chunk) in files.chunks(1024).enumerate() {
        let texts = chunk.iter().map(std::fs::read).collect::<std::io::Result<Vec<_>>>()?;
        let slices: Vec<&[u8]> = texts.iter().map(|t| t.as_slice()).collect();
        let empty = p.sign_batch(&slices, threads, &mut values)?;
        let np = values.len() / chunk.len();
        let keep: Vec<usize> = (0..chunk.len()).filter(|&i| !empty[i]).collect();
        let rows: Vec<u32> =
            keep.iter().flat_map(|&i| values[i * np..(i + 1) * np].to_vec()).collect();
        let cids: Vec<u64> = keep.iter().map(|&i| (c * 1024 + i) as u64).collect();
        ix.insert_values(&cids, &rows, threads)?;
        ids.extend_from_slice(&cids);
        sizes.extend(keep.iter().map(|&i| texts[i].len() as u64));
    }
    let name = |i: u64| escape(&files[i as usize].to_string_lossy());
    let mut out = String::new();
    if pairs {
        for r in ix.pairs(QUERY_VERIFY, 10_000_000)? {
            out += &format!("{}\t{}\t{:.4}\n", name(r.a), name(r.b), r.score);
        }
        print!("{out}");
        return Ok(());
    }
    let mut d = Dedup::new(&ix, mode, p.get_double(PARAM_THRESHOLD)?)?;
    d.set_threads(threads)?;
    d.sizes(&ids, &sizes)?;
    if let Some(m) = memory {
        d.set_memory(m)?;
    }
    // The pull loop: the engine names the texts it needs, we read them.
    loop {
        let need = d.next()?;
        if need.is_empty() {
            break;
        }
        let (mut got, mut texts, mut gone) = (Vec::new(), Vec::new(), Vec::new());
        for id in need {
            match std::fs::read(&files[id as usize]) {
                Ok(t) => {
                    got.push(id);
                    texts.push(t);
                }
                Err(e) => {
                    eprintln!("dedup: {}: {e}; its pairs are verified by estimate", name(id));
                    gone.push(id);
                }
            }
        }
        let slices: Vec<&[u8]> = texts.iter().map(|t| t.as_slice()).collect();
        match d.texts(&got, &slices) {
            Err(e) if e.code != EUTF8 => return Err(e.into()),
            _ => {}
        }
        d.missing(&gone)?;
    }
    // As the tool prints clusters: members in input order, groups in the
    // order of their first member.
    let mut lines: Vec<Vec<u64>> = d
        .groups()?
        .into_iter()
        .map(|g| {
            let mut m: Vec<u64> = g.members.iter().map(|m| m.id).collect();
            m.sort_unstable();
            m
        })
        .collect();
    lines.sort_unstable();
    for line in lines {
        out += &line.iter().map(|&i| name(i)).collect::<Vec<_>>().join("\t");
        out.push('\n');
    }
    print!("{out}");
    Ok(())
}

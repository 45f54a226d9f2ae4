//! Signs 100,000 documents of 45 bytes as bindings/bench-c.c does and prints
//! one JSON object.
use simlsh::*;

fn main() -> Result<()> {
    const DOCS: usize = 100_000;
    const BASE: &str = "lorem ipsum dolor sit amet, consectetur adipiscing elit";
    let p = Params::preset("dedup")?;
    let mut sig = Signature::new(&p)?;
    let texts: Vec<Vec<u8>> = (0..DOCS).map(|i| format!("{i:05} {}", &BASE[..39]).into()).collect();
    let mut check = 0u64;
    let t0 = std::time::Instant::now();
    for (i, t) in texts.iter().enumerate() {
        sig.set_text(t)?;
        check += sig.values()?[i % 128] as u64;
    }
    report("rust", t0.elapsed().as_secs_f64(), check);
    // The same documents in one call, on one thread.
    let t0 = std::time::Instant::now();
    let slices: Vec<&[u8]> = texts.iter().map(|t| t.as_slice()).collect();
    let (all, _) = p.sign_batch(&slices, 1)?;
    let check = (0..DOCS).map(|i| all[i * 128 + i % 128] as u64).sum();
    report("rust-batch", t0.elapsed().as_secs_f64(), check);
    Ok(())
}

fn report(name: &str, dt: f64, check: u64) {
    println!(
        "{{\"binding\": \"{name}\", \"docs\": 100000, \"doc_bytes\": 45, \"seconds\": {dt:.4}, \
         \"docs_per_s\": {:.0}, \"check\": {check}}}",
        100000.0 / dt
    );
}

//! Signs 100,000 documents of 45 bytes as bindings/bench-c.c does and prints
//! one JSON object per way of signing.
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
    // The same documents in chunks into one reused matrix, warmed before
    // the clock starts (see bindings/bench-c.c), on one thread.
    const CHUNK: usize = 4096;
    let slices: Vec<&[u8]> = texts.iter().map(|t| t.as_slice()).collect();
    let mut all = vec![1u32; CHUNK * 128];
    let mut check = 0u64;
    let t0 = std::time::Instant::now();
    for (c, chunk) in slices.chunks(CHUNK).enumerate() {
        p.sign_batch(chunk, 1, &mut all)?;
        let at = c * CHUNK;
        check += (at..at + chunk.len()).map(|i| all[(i - at) * 128 + i % 128] as u64).sum::<u64>();
    }
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

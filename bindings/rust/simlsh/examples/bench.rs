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
    let (t0, c0) = (std::time::Instant::now(), cpu());
    for (i, t) in texts.iter().enumerate() {
        sig.set_text(t)?;
        check += sig.values()?[i % 128] as u64;
    }
    report("rust", t0.elapsed().as_secs_f64(), cpu() - c0, check);
    // The same documents in chunks into one reused matrix (see
    // bindings/bench-c.c), on one thread.
    const CHUNK: usize = 4096;
    let slices: Vec<&[u8]> = texts.iter().map(|t| t.as_slice()).collect();
    let mut all = Vec::new();
    let mut pass = || -> Result<u64> {
        let mut check = 0;
        for (c, chunk) in slices.chunks(CHUNK).enumerate() {
            p.sign_batch(chunk, 1, &mut all)?;
            let at = c * CHUNK;
            check +=
                (at..at + chunk.len()).map(|i| all[(i - at) * 128 + i % 128] as u64).sum::<u64>();
        }
        Ok(check)
    };
    pass()?; // untimed, as in every binding: maps the matrix
    let (t0, c0) = (std::time::Instant::now(), cpu());
    let check = pass()?;
    report("rust-batch", t0.elapsed().as_secs_f64(), cpu() - c0, check);
    Ok(())
}

/// The process's CPU time in seconds (clock_gettime from the C library that
/// std links anyway), steadier than wall time on a loaded machine.
fn cpu() -> f64 {
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut [std::os::raw::c_long; 2]) -> i32;
    }
    let mut ts = [0; 2];
    unsafe { clock_gettime(2, &mut ts) }; // CLOCK_PROCESS_CPUTIME_ID on Linux
    ts[0] as f64 + ts[1] as f64 * 1e-9
}

fn report(name: &str, dt: f64, cpu: f64, check: u64) {
    println!(
        "{{\"binding\": \"{name}\", \"docs\": 100000, \"doc_bytes\": 45, \"seconds\": {dt:.4}, \
         \"docs_per_s\": {:.0}, \"cpu_seconds\": {cpu:.4}, \"cpu_docs_per_s\": {:.0}, \
         \"check\": {check}}}",
        100000.0 / dt,
        100000.0 / cpu
    );
}

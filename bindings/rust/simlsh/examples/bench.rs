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
    let dt = t0.elapsed().as_secs_f64();
    println!(
        "{{\"binding\": \"rust\", \"docs\": {DOCS}, \"doc_bytes\": 45, \"seconds\": {dt:.4}, \
         \"docs_per_s\": {:.0}, \"check\": {check}}}",
        DOCS as f64 / dt
    );
    Ok(())
}

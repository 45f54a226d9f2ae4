use simlsh::*;

#[test]
fn errors_carry_codes() {
    let mut p = Params::preset("default").unwrap();
    let e = p.set_int(PARAM_K, 0).unwrap_err();
    assert_eq!((e.code, e.name(), e.op), (-1, "EINVAL", "simlsh_params_set_int"));
    assert!(e.to_string().contains("invalid argument"));
    assert_eq!(Params::preset("nope").err().map(|e| e.name()), Some("ENOTFOUND"));
}

#[test]
fn pipeline() {
    let p = Params::preset("dedup").unwrap();
    let d = p.describe().unwrap();
    assert!(d.contains("normalize=lower,space") && d.contains("fn_weight=0.9"), "{d}");
    let mut ix = Index::new(&p).unwrap();
    assert_eq!(ix.bands().unwrap(), (14, 9));
    let (mut a, mut b) = (Signature::new(&p).unwrap(), Signature::new(&p).unwrap());
    let text = b"The quick brown fox jumps over the lazy dog, again and again.";
    a.set_text(text).unwrap();
    b.set_text(&text.to_ascii_uppercase()).unwrap();
    assert_eq!(a.jaccard(&b).unwrap(), 1.0);
    assert_eq!(a.values().unwrap().len(), 128);
    let id = (1u64 << 63) + 5;
    ix.insert(id, &a).unwrap();
    assert_eq!(ix.insert(id, &a).unwrap_err().name(), "EEXIST");
    let rows = ix.query(&b, QUERY_VERIFY).unwrap();
    assert_eq!(rows, vec![Row { a: id, b: 0, score: 1.0 }]);
    // No rows: an empty Vec, never a slice from a NULL column.
    assert!(ix.pairs(QUERY_VERIFY, 0).unwrap().is_empty());
    a.set_text(b"").unwrap();
    assert_eq!(ix.insert(2, &a).unwrap_err().name(), "EEMPTY");
    // Shared across threads as the header allows.
    let ix = std::sync::Arc::new(ix);
    let hits: usize = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2).map(|_| s.spawn(|| ix.query(&b, 0).unwrap().len())).collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(hits, 2);
}

#[test]
fn sys_constants_match_the_library() {
    use simlsh_sys::*;
    let value = |kind, name: &str| {
        let (mut v, c) = (0i64, std::ffi::CString::new(name).unwrap());
        assert_eq!(unsafe { simlsh_constant_value(&mut v, kind, c.as_ptr()) }, 0);
        v as i32
    };
    assert_eq!(value(SIMLSH_KIND_PARAM, "k"), SIMLSH_PARAM_K);
    assert_eq!(value(SIMLSH_KIND_PARAM, "num_perm"), SIMLSH_PARAM_NUM_PERM);
    assert_eq!(value(SIMLSH_KIND_PARAM, "threshold"), SIMLSH_PARAM_THRESHOLD);
    assert_eq!(value(SIMLSH_KIND_QUERY_FLAG, "verify"), SIMLSH_QUERY_VERIFY);
}

#[test]
fn sign_batch_equals_signatures() {
    let p = Params::preset("dedup").unwrap();
    let texts: [&[u8]; 3] = [b"first document, long enough", b"", b"the second one here"];
    let mut values = Vec::new();
    let empty = p.sign_batch(&texts, 2, &mut values).unwrap();
    assert_eq!(empty, [false, true, false]);
    // The matrix is reused: a second, shorter batch fits the same Vec.
    let cap = values.capacity();
    assert_eq!(p.sign_batch(&texts[2..], 1, &mut values).unwrap(), [false]);
    assert_eq!((values.len(), values.capacity()), (128, cap));
    let third = values.clone();
    p.sign_batch(&texts, 2, &mut values).unwrap();
    assert_eq!(third, &values[256..]);
    let mut s = Signature::new(&p).unwrap();
    for i in [0, 2] {
        s.set_text(texts[i]).unwrap();
        assert_eq!(s.values().unwrap(), &values[i * 128..(i + 1) * 128]);
    }
    let mut ix = Index::new(&p).unwrap();
    let rows: Vec<u32> = [&values[..128], &values[256..]].concat();
    // Fewer rows than ids: refused, never read past the slice.
    assert_eq!(ix.insert_values(&[7, 9], &rows[..200], 1).unwrap_err().name(), "EINVAL");
    ix.insert_values(&[7, 9], &rows, 1).unwrap();
    assert_eq!(ix.insert_values(&[1], &values[128..256], 1).unwrap_err().name(), "EEMPTY");
    assert_eq!(ix.query(&s, 0).unwrap()[0].a, 9);
}

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

/// Texts under ids 0, 1, ... in a "dedup" index.
fn dedup_index(texts: &[&[u8]]) -> (Params, Index) {
    let p = Params::preset("dedup").unwrap();
    let mut ix = Index::new(&p).unwrap();
    let mut values = Vec::new();
    p.sign_batch(texts, 1, &mut values).unwrap();
    let ids: Vec<u64> = (0..texts.len() as u64).collect();
    ix.insert_values(&ids, &values, 1).unwrap();
    (p, ix)
}

#[test]
fn dedup_pull_loop() {
    let base = "the harbour log of the third week, calm seas and light winds; ".repeat(8);
    let near = base.replacen("calm", "rough", 1);
    let texts: [&[u8]; 5] = [
        b"an unrelated text about gardens and the vegetables grown in them this year",
        base.as_bytes(),
        near.as_bytes(), // a near-copy of 1
        base.as_bytes(), // an exact copy of 1
        b"another unrelated text, the minutes of a council meeting held on a tuesday",
    ];
    let (p, mut ix) = dedup_index(&texts);
    {
        let mut d = Dedup::new(&ix, DedupMode::Exact, 0.8).unwrap();
        assert_eq!(d.groups().unwrap_err().name(), "ESTATE");
        d.set_threads(2).unwrap();
        assert_eq!(d.set_threads(1000).unwrap_err().name(), "EINVAL");
        assert_eq!(d.sizes(&[1], &[]).unwrap_err().name(), "EINVAL");
        let mut batches = 0;
        loop {
            let need = d.next().unwrap();
            if need.is_empty() {
                break;
            }
            batches += 1;
            assert_eq!(d.set_threads(1).unwrap_err().name(), "ESTATE");
            assert_eq!(d.texts(&[99], &[b"x"]).unwrap_err().name(), "EINVAL");
            let got: Vec<&[u8]> = need.iter().map(|&i| texts[i as usize]).collect();
            let h = need.len() / 2; // in two calls, the second half first
            d.texts(&need[h..], &got[h..]).unwrap();
            d.texts(&need[..h], &got[..h]).unwrap();
        }
        let g = d.groups().unwrap();
        assert!(batches > 0);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].centre, 1);
        let m = &g[0].members;
        assert_eq!(
            (m.len(), m[0], m[1].id, m[2]),
            (3, Member { id: 1, score: 1.0 }, 2, Member { id: 3, score: 1.0 })
        );
        assert!(m[1].score >= 0.8 && m[1].score < 1.0, "{m:?}");
        assert_eq!(d.stat(DedupStat::Members).unwrap(), 2);
        assert_eq!(d.stat(DedupStat::Identical).unwrap(), 1);
        // the index is only read: queries may run while the engine lives
        let mut e = Dedup::new(&ix, DedupMode::Estimate, 0.8).unwrap();
        assert!(e.next().unwrap().is_empty());
        assert_eq!(e.groups().unwrap()[0].members.len(), 3);
        let mut o = Dedup::new(&ix, DedupMode::None, 0.8).unwrap();
        o.order(&[3]).unwrap();
        assert!(o.next().unwrap().is_empty());
        let g = o.groups().unwrap();
        assert_eq!((g[0].centre, g[0].members[0].score, g[0].members[1].score), (3, 1.0, -1.0));
        // missing texts are decided by the estimate
        let mut x = Dedup::new(&ix, DedupMode::Exact, 0.8).unwrap();
        let need = x.next().unwrap();
        x.missing(&need).unwrap();
        assert!(x.next().unwrap().is_empty());
        assert_eq!(x.stat(DedupStat::Estimated).unwrap(), 2);
        assert_eq!(x.groups().unwrap()[0].members.len(), 3);
    }
    // once the engines are gone the index may change again
    let mut s = Signature::new(&p).unwrap();
    s.set_text(b"one more document, inserted after the engines").unwrap();
    ix.insert(7, &s).unwrap();
    let (buckets, above) = ix.largest_buckets(3, 3).unwrap();
    assert_eq!((buckets[0].size, buckets[0].sample, above), (3, 1, 3));
    assert!(Dedup::new(&ix, DedupMode::Exact, 1.5).is_err());
    let f = dedup_prefilter(0.8, 128);
    assert!(f > 0.6 && f < 0.8 && dedup_prefilter(0.0, 128) == -1.0);
    assert_eq!(optimal_params_recall(128, 0.8, 0.99, 0.0).map(|(b, r, _)| (b, r)), Ok((16, 6)));
}

#[test]
fn dedup_names_are_the_librarys() {
    use simlsh_sys::*;
    use std::ffi::CStr;
    // every name the library lists for a kind, in value order
    let listed = |kind| {
        let mut out = Vec::new();
        let (mut v, mut n) = (0i64, std::ptr::null());
        while unsafe { simlsh_constant_at(&mut v, &mut n, kind, out.len()) } == 0 {
            out.push((v, unsafe { CStr::from_ptr(n) }.to_str().unwrap()));
        }
        out
    };
    let modes: Vec<_> =
        DedupMode::ALL.iter().map(|m| (m.value().unwrap() as i64, m.name())).collect();
    assert_eq!(modes, listed(SIMLSH_KIND_DEDUP_MODE));
    let stats: Vec<_> =
        DedupStat::ALL.iter().map(|s| (s.value().unwrap() as i64, s.name())).collect();
    assert_eq!(stats, listed(SIMLSH_KIND_DEDUP_STAT));
    let keys: Vec<_> = listed(SIMLSH_KIND_DEDUP_KEY).into_iter().map(|(_, n)| n).collect();
    for k in ["threads", "memory", "prefilter", "keep_below", "giant", "giant_cost"] {
        assert!(keys.contains(&k), "{k} in {keys:?}");
    }
}

#[test]
fn dedup_banding_is_the_policys() {
    let mut p = Params::preset("dedup").unwrap();
    let banding = |p: &Params| (p.get_int(PARAM_BANDS).unwrap(), p.get_int(PARAM_ROWS).unwrap());
    assert_eq!(dedup_banding(&mut p, DedupMode::Exact, 0.99, 0, 0), Ok((16, 6)));
    assert_eq!(banding(&p), (16, 6));
    assert_eq!(Index::new(&p).unwrap().bands().unwrap(), (16, 6));
    assert_eq!(dedup_banding(&mut p, DedupMode::Estimate, 0.99, 0, 0), Ok((0, 0)));
    assert_eq!(banding(&p), (0, 0));
    assert_eq!(dedup_banding(&mut p, DedupMode::Exact, 0.99, 20, 0), Ok((20, 6)));
    // does not fit: refused, the params as they were
    let e = dedup_banding(&mut p, DedupMode::Exact, 0.99, 20, 7).unwrap_err();
    assert_eq!((e.op, e.name()), ("simlsh_dedup_banding", "EINVAL"));
    assert_eq!(banding(&p), (20, 6));
    assert_eq!(dedup_banding(&mut p, DedupMode::Exact, 1.0, 0, 0).unwrap_err().name(), "EINVAL");
}

/// `n` texts of 200 words from one template, each with a fifth of its words
/// its own, so that every two share about half their shingles.
fn templated(n: usize) -> Vec<String> {
    (0..n)
        .map(|d| {
            (0..200)
                .map(|i| {
                    if (d * 131 + i * 71 + (d * i) % 97) % 100 < 20 {
                        format!("d{d}x{i} ")
                    } else {
                        format!("word{i} ")
                    }
                })
                .collect()
        })
        .collect()
}

#[test]
fn dedup_giant_buckets() {
    let texts = templated(40);
    let mut p = Params::preset("dedup").unwrap();
    // 2 rows a band: buckets of most of the corpus, of unlike documents
    dedup_banding(&mut p, DedupMode::None, 0.99, 64, 2).unwrap();
    let mut ix = Index::new(&p).unwrap();
    let mut s = Signature::new(&p).unwrap();
    for (i, t) in texts.iter().enumerate() {
        s.set_text(t.as_bytes()).unwrap();
        ix.insert(i as u64, &s).unwrap();
    }
    let run = |giant: u64, cost: f64| {
        let mut d = Dedup::new(&ix, DedupMode::Estimate, 0.8).unwrap();
        d.set_giant(giant).unwrap();
        d.set_giant_cost(cost).unwrap();
        assert!(d.next().unwrap().is_empty());
        assert_eq!(d.set_giant(10).unwrap_err().name(), "ESTATE");
        (d.stat(DedupStat::SetAside).unwrap(), d.stat(DedupStat::SetAsideMembers).unwrap())
    };
    assert_eq!(run(0, 64.0), (0, 0));
    let (aside, members) = run(8, 0.0);
    assert!(aside > 0 && members > 8 * aside, "{aside} set aside, {members} members");
    let mut d = Dedup::new(&ix, DedupMode::Estimate, 0.8).unwrap();
    assert_eq!(d.set_giant_cost(2e15).unwrap_err().name(), "EINVAL");
}

#[test]
fn dedup_constants_match_the_header() {
    // the kinds the names are read from, and the params keys, from the header
    let Ok(path) = std::env::var("SIMLSH_HEADER") else { return };
    let h = std::fs::read_to_string(path).unwrap();
    let value = |name: &str| -> i32 {
        let at = h.find(&format!("{name} = ")).unwrap_or_else(|| panic!("{name}"));
        let v = &h[at + name.len() + 3..];
        v[..v.find(|c: char| !c.is_ascii_digit() && c != '-').unwrap()].parse().unwrap()
    };
    use simlsh_sys::*;
    let pairs = [
        ("SIMLSH_KIND_DEDUP_MODE", SIMLSH_KIND_DEDUP_MODE),
        ("SIMLSH_KIND_DEDUP_KEY", SIMLSH_KIND_DEDUP_KEY),
        ("SIMLSH_KIND_DEDUP_STAT", SIMLSH_KIND_DEDUP_STAT),
        ("SIMLSH_PARAM_BANDS", SIMLSH_PARAM_BANDS),
        ("SIMLSH_PARAM_ROWS", SIMLSH_PARAM_ROWS),
    ];
    for (name, v) in pairs {
        assert_eq!(value(name), v, "{name}");
    }
    assert_eq!(Error { op: "", code: EUTF8 }.name(), "EUTF8");
}

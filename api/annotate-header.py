#!/usr/bin/env python3
"""Mark the out-parameters of include/simlsh.h with SIMLSH_OUT and rewrap
declarations longer than 100 columns: a helper for header edits, run by
hand; the test `api` (tests/check-api.py) fails on unmarked ones.

Usage: annotate-header.py include/simlsh.h
"""
import re,sys
p=sys.argv[1]
s=open(p).read()
def fix_decl(m):
    decl=m.group(0)
    i=decl.index('(')
    head,args=decl[:i+1],decl[i+1:]
    def fix_arg(a):
        t=a.strip()
        if 'SIMLSH_OUT' in t: return a
        writable = (re.match(r'(const\s+)?\w+\s*\*\s*\*\s*\w+$', t)
                    or re.match(r'(uint\d+_t|int\d*_t|int|double|size_t|void|char)\s*\*\s*\w+$', t))
        if writable:
            lead=a[:len(a)-len(a.lstrip())]
            return lead+'SIMLSH_OUT '+a.lstrip()
        return a
    return head+','.join(fix_arg(x) for x in args.split(','))
s=re.sub(r'SIMLSH_API [^;]*;',fix_decl,s)
def rewrap(m):
    decl=m.group(0)
    if all(len(l)<=100 for l in decl.split('\n')): return decl
    one=re.sub(r'\s*\n\s*',' ',decl)
    i=one.index('(')
    head=one[:i+1]; args=[a.strip() for a in one[i+1:].split(',')]
    ind=' '*len(head)
    lines=[]; cur=head
    for k,a in enumerate(args):
        piece=a+(',' if k<len(args)-1 else '')
        sep='' if cur.endswith('(') else ' '
        if len(cur+sep+piece)<=100 or cur.endswith('('):
            cur=cur+sep+piece
        else:
            lines.append(cur); cur=ind+piece
    lines.append(cur)
    return '\n'.join(lines)
s=re.sub(r'SIMLSH_API [^;]*;',rewrap,s)
open(p,'w').write(s)

import sqlite3,statistics as st,collections,re
db=sqlite3.connect('/tmp/host/host.db')
nr=db.execute("select run_id,model,batch,input_size,created_at,enqueue_ms,median_ms from network_runs order by run_id,created_at").fetchall()
ms=db.execute("select m.run_id,c.signature,m.settings_key,m.median_ms,m.created_at from measurements m join configs c on c.id=m.config_id order by m.created_at").fetchall()
inst=collections.defaultdict(list)   # (model,b,size) -> [(sig,key,val)]
byrun=collections.defaultdict(list)
for r in nr: byrun[r[0]].append(r)
allrows=collections.defaultdict(list)
for rid,sig,key,v,ts in ms:
    allrows[(sig,key)].append((ts,v))
    for r in byrun[rid]:
        if ts<=r[4]+1e-6:
            inst[(r[1],r[2],r[3])].append((sig,key,v)); break
latest={k:max(v)[1] for k,v in allrows.items()}
med={k:st.median([x[1] for x in v]) for k,v in allrows.items()}
res={}
for name,f in [('own rows',None),('latest row (predictor now)',latest),('median of all rows',med)]:
    ratios=[];keys=[]
    for r in nr:
        k=(r[1],r[2],r[3]); s=sum(v if f is None else f[(sig,key)] for sig,key,v in inst[k])
        ratios.append(s/r[5]); keys.append(k)
    # best single scale (relative LS): minimize sum (a*x-1)^2 -> a=sum x/sum x^2
    a=sum(ratios)/sum(x*x for x in ratios)
    errs=[abs(a*x-1)*100 for x in ratios]
    for b in (1,8,32):
        e=[errs[i] for i in range(len(nr)) if nr[i][2]==b]
        print('%-28s scale %.3f  b%-2d host vs enqueue: median %5.1f%% worst %5.1f%%'%(name,a,b,st.median(e),max(e)))
print('instances with layers assigned:',sum(1 for k in inst), 'of', len(nr))

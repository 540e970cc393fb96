import csv,sqlite3,statistics as st,sys
db=sqlite3.connect('/tmp/host/host.db')
newm={(m,b,s):med for m,b,s,med in db.execute("select model,batch,input_size,median_ms from network_runs where mode='free'")}
rows=list(csv.DictReader(open(sys.argv[1])))
def tag(r):
    k=(r['model'],int(r['batch']),int(r['height']))
    return 'new' if abs(float(r['measured_ms'])-newm[k])<1e-5*newm[k] else 'old'
def summ(xs):
    a=[abs(x) for x in xs]
    return 'n=%3d median %5.1f%% worst %5.1f%% within10 %3.0f%%'%(len(a),st.median(a),max(a),100*sum(x<=10 for x in a)/len(a))
free=[r for r in rows if r['mode']=='free']
for b in ['1','8','32','all']:
    for t in ['all','old','new']:
        xs=[float(r['error_pct']) for r in free if (b=='all' or r['batch']==b) and (t=='all' or tag(r)==t)]
        print('free b=%-3s runs=%-3s %s'%(b,t,summ(xs)))
print()
print('worst new runs:')
for r in sorted([r for r in free if tag(r)=='new'],key=lambda r:-abs(float(r['error_pct'])))[:12]:
    print(r['model'],r['batch'],r['height'],r['measured_ms'],r['predicted_ms'],r['error_pct'],r['coverage_host'])
print('worst old runs:')
for r in sorted([r for r in free if tag(r)=='old'],key=lambda r:-abs(float(r['error_pct'])))[:12]:
    print(r['model'],r['batch'],r['height'],r['measured_ms'],r['predicted_ms'],r['error_pct'],r['coverage_host'])

"""pairs.py RUN.json: the per-round ratio of every cell's inline-4096 run
(variant B of the experiment, see experiment.patch) to its inline-1024 run
(variant A, the code as it was) of the same round, and their median."""
import json,sys,collections,statistics
d=json.load(open(sys.argv[1]))
raw=d['raw']
g=collections.defaultdict(dict)
for r in raw:
    k=(r['client'],r['server'],r['workload'],r['size'],r['in_flight'])
    g[k].setdefault(r['round'],{})[r['inline']]=r['ops_per_s']
for k,rounds in g.items():
    rs=[v[4096]/v[1024] for v in rounds.values() if 1024 in v and 4096 in v and v[1024]>0]
    print('%-8s %-10s %-8s %6s x%-3d  median B/A %.2f  rounds %s'%(k[0],k[1],k[2],k[3],k[4],statistics.median(rs),' '.join('%.2f'%x for x in rs)))

// SPDX-License-Identifier: MIT
// hvmtrace report --html: the memory display (docs/plots.md, "The HTML report"). Reads the metadata and
// series (#hvt-meta) and the tiles (#hvt-tiles: page-intervals per cell and block, gzip'd, base64) from
// this file, and draws the charts, the memory grid, the summary and a cell's history. A time range is a
// range of whole blocks (a block is one interval unless the trace is large).
'use strict';
(async function () {
	const M = JSON.parse(document.getElementById('hvt-meta').textContent);
	const IV = M.intervals, N = IV.seq.length, CP = M.cell_pages, NC = M.ncells, B = M.block;
	const NB = M.nblocks, PS = M.page_size;
	const $ = (id) => document.getElementById(id);
	const hex = (v) => '0x' + v.toString(16);
	const fmtInt = (v) => v.toLocaleString('en-US');
	const WRITTEN = [204, 26, 26], ACCESSED = [38, 102, 204];

	// ---- data ----
	const packed = await fetch('data:application/gzip;base64,' +
		document.getElementById('hvt-tiles').textContent.replace(/\s/g, ''));
	const raw = await new Response(packed.body.pipeThrough(new DecompressionStream('gzip'))).arrayBuffer();
	const TA = M.tile_bytes === 4 ? Uint32Array : Uint16Array;
	const tilesW = new TA(raw, 0, NB * NC);
	const tilesA = M.accessed_available ? new TA(raw, NB * NC * M.tile_bytes, NB * NC) : null;

	// Segments of the RAM ([first GFN, end GFN, first cell]; large gaps are left out) and their cells.
	const SEGS = M.segments;
	const segOf = (g) => SEGS.find(([f, e]) => g >= f && g < e);
	const cellOf = (g) => { const s = segOf(g); return s ? s[2] + Math.floor((g - s[0]) / CP) : -1; };
	const segOfCell = (c) => { let best = SEGS[0]; for (const s of SEGS) if (c >= s[2]) best = s; return best; };
	const gfnOf = (c) => { const s = segOfCell(c); return s[0] + (c - s[2]) * CP; };
	window.hvtCellOf = cellOf; // for tests: where a page is drawn
	// RAM pages of each cell (cells may straddle a small hole or the end of a slot).
	const ram = new Uint32Array(NC);
	for (const s of M.slots)
		for (let g = s.first; g < s.end;) {
			const seg = segOf(g), c = cellOf(g);
			const end = Math.min(s.end, seg[0] + (c - seg[2] + 1) * CP);
			ram[c] += end - g;
			g = end;
		}
	// Owners (report --html --by): each cell's owner over the selection and the legend of top writers.
	const OWN = M.owners || null;
	const ownerOfCell = new Int32Array(OWN ? NC : 0).fill(-1), ownerPages = new Uint32Array(OWN ? NC : 0);
	if (OWN)
		for (const [f, n, l, p] of OWN.cells)
			for (let c = f; c < f + n; c++) { ownerOfCell[c] = l; ownerPages[c] = p; }
	const ownerText = (c) => ownerOfCell[c] < 0 ? 'not known'
		: `${OWN.labels[ownerOfCell[c]]}` + (CP === 1 ? '' : ` (${fmtInt(ownerPages[c])} of ${fmtInt(ram[c])} pages)`);
	const channelOf = (gfn) => {
		for (const e of M.extents) if (gfn >= e.first && gfn < e.end) return e.channel;
		return null;
	};

	// ---- layout of the grid: a power-of-two width ----
	let W = 1;
	while (W * W < NC * 2) W *= 2;
	const ROWS = Math.ceil(NC / W), PX = Math.max(1, Math.floor(1024 / W));
	const grid = $('grid'), gctx = grid.getContext('2d');
	grid.width = W;
	grid.height = ROWS;
	grid.style.width = W * PX + 'px';
	grid.style.height = ROWS * PX + 'px';
	const image = gctx.createImageData(W, ROWS);

	// ---- state ----
	const state = { b0: 0, b1: NB - 1, metric: 'written', sumW: new Float64Array(NC),
			sumA: new Float64Array(NC), playing: null, cell: -1 };
	const ivFirst = (b) => b * B, ivLast = (b) => Math.min(N - 1, (b + 1) * B - 1);

	function recompute() {
		state.sumW.fill(0);
		state.sumA.fill(0);
		for (let b = state.b0; b <= state.b1; b++) {
			const o = b * NC;
			for (let c = 0; c < NC; c++) {
				state.sumW[c] += tilesW[o + c];
				if (tilesA) state.sumA[c] += tilesA[o + c];
			}
		}
	}

	function paint(valueOf) {
		const d = image.data;
		for (let c = 0; c < W * ROWS; c++) {
			const k = c * 4;
			let rgb = [255, 255, 255];
			if (c >= NC || ram[c] === 0) rgb = ((c % W) + Math.floor(c / W)) % 2 ? [216, 216, 216] : [240, 240, 240];
			else {
				const [v, col] = valueOf(c);
				if (v > 0) {
					const t = 0.12 + 0.88 * Math.sqrt(Math.min(1, v));
					rgb = col.map((x) => Math.round(255 * (1 - t) + x * t));
				}
			}
			d[k] = rgb[0]; d[k + 1] = rgb[1]; d[k + 2] = rgb[2]; d[k + 3] = 255;
		}
		gctx.putImageData(image, 0, 0);
	}

	// Share of the cell's page-intervals in the range that were written (or accessed).
	function drawStatic() {
		const n = ivLast(state.b1) - ivFirst(state.b0) + 1;
		paint((c) => {
			const den = ram[c] * n, w = state.sumW[c] / den, a = tilesA ? state.sumA[c] / den : 0;
			if (state.metric === 'accessed') return [a, ACCESSED];
			return w > 0 ? [w, WRITTEN] : [a > 0 ? 0.15 * a : 0, ACCESSED];
		});
		$('legend-note').textContent = state.metric === 'accessed'
			? 'of the cell\'s page-intervals accessed in the range'
			: 'of the cell\'s page-intervals written in the range (pale blue: only accessed)';
	}

	// ---- charts ----
	const t0 = IV.t0[0], t1 = IV.t1[N - 1];
	function chart(canvas, series, unit) {
		const ctx = canvas.getContext('2d'), w = canvas.width, h = canvas.height, L = 64, R = 8, T = 20, Bm = 22;
		let top = 0;
		for (const s of series) for (const v of s.v) if (v !== null && v > top) top = v;
		top = top > 0 ? top * 1.1 : 1;
		const x = (t) => L + (t - t0) / (t1 - t0 || 1) * (w - L - R), y = (v) => h - Bm - v / top * (h - T - Bm);
		canvas.plot = { x, L, R, w };
		ctx.clearRect(0, 0, w, h);
		ctx.fillStyle = 'rgba(255, 200, 0, 0.25)';
		ctx.fillRect(x(IV.t0[ivFirst(state.b0)]), T, x(IV.t1[ivLast(state.b1)]) - x(IV.t0[ivFirst(state.b0)]), h - T - Bm);
		ctx.strokeStyle = '#999';
		ctx.strokeRect(L, T, w - L - R, h - T - Bm);
		ctx.fillStyle = '#222';
		ctx.font = '11px sans-serif';
		ctx.textAlign = 'right';
		ctx.fillText(top / 1.1 >= 10 ? Math.round(top / 1.1).toLocaleString('en-US') : (top / 1.1).toPrecision(3), L - 4, y(top / 1.1) + 4);
		ctx.fillText('0', L - 4, h - Bm + 4);
		ctx.save();
		ctx.translate(12, h / 2);
		ctx.rotate(-Math.PI / 2);
		ctx.textAlign = 'center';
		ctx.fillText(unit, 0, 0);
		ctx.restore();
		for (let k = 0; k <= 5; k++) {
			const t = t0 + (t1 - t0) * k / 5;
			ctx.textAlign = k === 0 ? 'left' : k === 5 ? 'right' : 'center';
			ctx.fillText(t.toFixed(t1 - t0 < 20 ? 1 : 0) + ' s', x(t), h - 6);
		}
		let lx = w - R - 6;
		for (const s of series) {
			ctx.strokeStyle = s.colour;
			ctx.lineWidth = 1.5;
			ctx.setLineDash(s.dash || []);
			ctx.beginPath();
			let down = false;
			for (let i = 0; i < N; i++) {
				if (s.v[i] === null) { down = false; continue; }
				const px = x((IV.t0[i] + IV.t1[i]) / 2), py = y(s.v[i]);
				if (down) ctx.lineTo(px, py); else ctx.moveTo(px, py);
				down = true;
			}
			ctx.stroke();
			ctx.setLineDash([]);
			ctx.textAlign = 'right';
			ctx.fillStyle = s.colour;
			ctx.fillText(s.name, lx, T - 6);
			lx -= ctx.measureText(s.name).width + 24;
		}
	}
	const mib = PS / 1048576, na = (v) => v === null;
	function drawCharts() {
		const ws = [{ name: 'written (MiB)', colour: 'rgb(204,26,26)', v: IV.written.map((v) => na(v) ? null : v * mib) }];
		if (M.accessed_available)
			ws.push({ name: 'accessed (MiB)', colour: 'rgb(38,102,204)', v: IV.accessed.map((v) => na(v) ? null : v * mib) });
		chart($('wss'), ws, 'MiB');
		if (M.bandwidth === 'none') return;
		const rate = (arr) => arr.map((v, i) => na(v) ? null : v / 1e6 / (IV.t1[i] - IV.t0[i]));
		const bs = [{ name: M.bandwidth === 'total' ? 'total MB/s' : 'read MB/s', colour: '#000', v: rate(IV.read_bytes) }];
		if (M.bandwidth === 'split') bs.push({ name: 'write MB/s', colour: 'rgb(214,39,40)', dash: [5, 3], v: rate(IV.write_bytes) });
		chart($('bw'), bs, 'MB/s');
	}

	// Drag on a chart: the blocks under the dragged span become the range.
	function blockAt(canvas, px) {
		const p = canvas.plot, t = t0 + (px - p.L) / (p.w - p.L - p.R) * (t1 - t0);
		let i = 0;
		while (i < N - 1 && IV.t1[i] <= t) i++;
		return Math.floor(i / B);
	}
	for (const id of ['wss', 'bw']) {
		const cv = $(id);
		let from = null;
		cv.addEventListener('mousedown', (e) => { from = e.offsetX; });
		cv.addEventListener('mouseup', (e) => {
			if (from === null) return;
			const a = blockAt(cv, Math.min(from, e.offsetX)), b = blockAt(cv, Math.max(from, e.offsetX));
			from = null;
			select(a, b);
		});
	}

	// ---- summary ----
	function summary() {
		const i0 = ivFirst(state.b0), i1 = ivLast(state.b1), rows = [];
		const sum = (arr) => { let s = 0, have = false; for (let i = i0; i <= i1; i++) if (!na(arr[i])) { s += arr[i]; have = true; } return have ? s : null; };
		const peak = (arr) => { let p = null, at = null; for (let i = i0; i <= i1; i++) if (!na(arr[i]) && (p === null || arr[i] > p)) { p = arr[i]; at = IV.seq[i]; } return [p, at]; };
		const n = i1 - i0 + 1, secs = IV.t1[i1] - IV.t0[i0];
		const row = (id, label, value, text) => rows.push(`<tr><td>${label}</td><td class="v${value === null ? ' na' : ''}" id="${id}" data-value="${value === null ? '' : value}">${value === null ? text || 'not available' : text}</td></tr>`);
		row('sum-intervals', 'intervals', n, `${n} (seq ${IV.seq[i0]}–${IV.seq[i1]})`);
		row('sum-first-seq', 'first / last seq', IV.seq[i0], `${IV.seq[i0]} / ${IV.seq[i1]}`);
		row('sum-seconds', 'time', secs, `${IV.t0[i0].toFixed(3)}–${IV.t1[i1].toFixed(3)} s (${secs.toFixed(3)} s)`);
		const w = sum(IV.written), [wp, wat] = peak(IV.written);
		row('sum-written', 'written page-intervals', w, w === null ? null : `${fmtInt(w)} (${(w * mib).toFixed(1)} MiB)`);
		row('sum-written-peak', 'peak written pages/interval', wp, wp === null ? null : `${fmtInt(wp)} (interval ${wat})`);
		const a = sum(IV.accessed), [ap, aat] = peak(IV.accessed);
		row('sum-accessed', 'accessed page-intervals', a, a === null ? `not available (mode ${M.mode})` : `${fmtInt(a)} (${(a * mib).toFixed(1)} MiB)`);
		row('sum-accessed-peak', 'peak accessed pages/interval', ap, ap === null ? `not available (mode ${M.mode})` : `${fmtInt(ap)} (interval ${aat})`);
		let cw = 0, ca = 0;
		for (let c = 0; c < NC; c++) { if (state.sumW[c] > 0) cw++; if (state.sumA[c] > 0) ca++; }
		if (CP === 1) {
			row('sum-distinct-written', 'distinct pages written', cw, `${fmtInt(cw)} (${(cw * mib).toFixed(1)} MiB)`);
			row('sum-distinct-accessed', 'distinct pages accessed', tilesA ? ca : null, tilesA ? `${fmtInt(ca)} (${(ca * mib).toFixed(1)} MiB)` : `not available (mode ${M.mode})`);
		} else {
			row('sum-cells-written', `cells written (of ${fmtInt(NC)})`, cw, fmtInt(cw));
		}
		const rd = M.bandwidth === 'none' ? null : sum(IV.read_bytes), wr = M.bandwidth === 'split' ? sum(IV.write_bytes) : null;
		const note = M.bandwidth === 'none' ? 'not measured in this trace' : 'not available (total only)';
		row('sum-read-bytes', M.bandwidth === 'total' ? 'DRAM bytes, total' : 'DRAM bytes read', rd, rd === null ? note : `${fmtInt(rd)} (${(rd / 1e6 / secs).toFixed(1)} MB/s)`);
		row('sum-write-bytes', 'DRAM bytes written', wr, wr === null ? note : `${fmtInt(wr)} (${(wr / 1e6 / secs).toFixed(1)} MB/s)`);
		$('summary').innerHTML = rows.join('');
		$('range-text').textContent = `intervals ${IV.seq[i0]}–${IV.seq[i1]}, ${IV.t0[i0].toFixed(3)}–${IV.t1[i1].toFixed(3)} s`;
		$('range-text').dataset.first = IV.seq[i0];
		$('range-text').dataset.last = IV.seq[i1];
	}

	// ---- the legend of owners (the whole page's selection, not the dragged range) ----
	function esc(t) { return String(t).replace(/[&<>"]/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[ch]); }
	function owners() {
		if (!OWN) return;
		$('owners-box').hidden = false;
		$('owners-what').textContent = `(by ${OWN.by}; ${OWN.source}; page-intervals of the whole page)`;
		const rows = ['<tr><td></td><td class="v">written</td><td class="v">accessed</td></tr>'];
		for (const e of OWN.legend)
			rows.push(`<tr class="owner"><td>${esc(OWN.labels[e.label])}</td><td class="v">${fmtInt(e.written)}</td>` +
				`<td class="v${e.accessed === null ? ' na' : ''}">${e.accessed === null ? 'n/a' : fmtInt(e.accessed)}</td></tr>`);
		$('owners').innerHTML = rows.join('');
	}
	owners();

	// ---- hover and click ----
	function cellAt(e) {
		const col = Math.floor(e.offsetX / PX), row = Math.floor(e.offsetY / PX), c = row * W + col;
		return col >= 0 && col < W && c >= 0 && c < NC ? c : -1;
	}
	function describeCell(c) {
		const g = gfnOf(c), ch = channelOf(g), last = Math.min(g + CP, segOfCell(c)[1]) - 1;
		return { gfn: g, text: CP === 1 ? `GFN ${hex(g)} (GPA ${hex(g * PS)})` : `GFN ${hex(g)}–${hex(last)} (${CP * PS / 1024} KiB)`, channel: ch };
	}
	const tip = $('tip');
	grid.addEventListener('mousemove', (e) => {
		const c = cellAt(e);
		if (c < 0 || ram[c] === 0) { tip.hidden = true; return; }
		const d = describeCell(c), n = ivLast(state.b1) - ivFirst(state.b0) + 1;
		const w = state.sumW[c], a = tilesA ? state.sumA[c] : null;
		const count = (v) => CP === 1 ? `in ${fmtInt(v)} of ${n} intervals` : `${fmtInt(v)} page-intervals of ${fmtInt(ram[c] * n)}`;
		tip.innerHTML = `<b id="tip-gfn">${d.text}</b><br>host channel: <span id="tip-channel">${d.channel || 'not known (not devmem-backed)'}</span>` +
			`<br>written: <span id="tip-written">${count(w)}</span><br>accessed: <span id="tip-accessed">${a === null ? `not available (mode ${M.mode})` : count(a)}</span>`;
		if (OWN)
			tip.innerHTML += `<br>${OWN.by === 'kind' ? 'kind' : 'owner'}: <span id="tip-owner">${esc(ownerText(c))}</span>`;
		Object.assign(tip.dataset, { cell: c, gfn: d.gfn, written: w, accessed: a === null ? '' : a, channel: d.channel || '',
			owner: OWN && ownerOfCell[c] >= 0 ? OWN.labels[ownerOfCell[c]] : '' });
		tip.style.left = Math.min(e.offsetX + 14, grid.clientWidth - 200) + 'px';
		tip.style.top = e.offsetY + 14 + 'px';
		tip.hidden = false;
	});
	grid.addEventListener('mouseleave', () => { tip.hidden = true; });
	grid.addEventListener('click', (e) => { const c = cellAt(e); if (c >= 0 && ram[c] > 0) history(c); });

	function history(c) {
		state.cell = c;
		const cv = $('history'), ctx = cv.getContext('2d'), w = cv.width, h = cv.height, L = 40, Bm = 18;
		const d = describeCell(c), ws = [], as = [];
		let top = 1, totW = 0, totA = 0;
		for (let b = 0; b < NB; b++) {
			ws.push(tilesW[b * NC + c]);
			as.push(tilesA ? tilesA[b * NC + c] : 0);
			top = Math.max(top, ws[b], as[b]);
			totW += ws[b];
			totA += as[b];
		}
		ctx.clearRect(0, 0, w, h);
		ctx.strokeStyle = '#999';
		ctx.strokeRect(L, 4, w - L - 4, h - 4 - Bm);
		const bw = (w - L - 4) / NB;
		ctx.fillStyle = 'rgba(255, 200, 0, 0.25)';
		ctx.fillRect(L + state.b0 * bw, 4, (state.b1 - state.b0 + 1) * bw, h - 4 - Bm);
		for (let b = 0; b < NB; b++) {
			const hA = as[b] / top * (h - 8 - Bm), hW = ws[b] / top * (h - 8 - Bm);
			ctx.fillStyle = 'rgb(38,102,204)';
			ctx.fillRect(L + b * bw, h - Bm - hA, Math.max(1, bw - 1), hA);
			ctx.fillStyle = 'rgb(204,26,26)';
			ctx.fillRect(L + b * bw, h - Bm - hW, Math.max(1, bw - 1), hW);
		}
		ctx.fillStyle = '#222';
		ctx.font = '11px sans-serif';
		ctx.textAlign = 'right';
		ctx.fillText(String(top), L - 4, 14);
		ctx.fillText('0', L - 4, h - Bm);
		ctx.textAlign = 'left';
		ctx.fillText(`${IV.t0[0].toFixed(0)} s`, L, h - 4);
		ctx.textAlign = 'right';
		ctx.fillText(`${IV.t1[N - 1].toFixed(0)} s`, w - 4, h - 4);
		$('hist-what').textContent = d.text + (d.channel ? ', channel ' + d.channel : '');
		$('hist-text').innerHTML = `${CP === 1 ? 'written in' : 'page-intervals written:'} <b id="hist-written">${fmtInt(totW)}</b>` +
			(tilesA ? `, accessed: <b id="hist-accessed">${fmtInt(totA)}</b>` : `, accessed: not available (mode ${M.mode})`) +
			` over the whole trace; bars: ${B === 1 ? 'intervals' : `blocks of ${B} intervals`} (red written, blue accessed)`;
		$('hist-text').dataset.cell = c;
		$('hist-text').dataset.written = ws.join(',');
		$('hist-text').dataset.accessed = tilesA ? as.join(',') : '';
	}

	// ---- playback: each block in turn, colour decaying ----
	function play() {
		if (state.playing) { stop(); return; }
		const heat = new Float32Array(NC), decay = 0.75;
		let b = state.b0;
		$('play').textContent = '\u25a0 stop';
		const step = () => {
			const src = state.metric === 'accessed' && tilesA ? tilesA : tilesW, o = b * NC;
			const n = ivLast(b) - ivFirst(b) + 1;
			for (let c = 0; c < NC; c++) heat[c] = heat[c] * decay + (ram[c] ? src[o + c] / (ram[c] * n) : 0);
			paint((c) => [heat[c], state.metric === 'accessed' ? ACCESSED : WRITTEN]);
			$('frame').textContent = `t = ${IV.t0[ivFirst(b)].toFixed(1)} s (seq ${IV.seq[ivFirst(b)]})`;
			$('frame').dataset.block = b;
			if (++b > state.b1) { stop(); return; }
			state.playing = setTimeout(step, 1000 / Number($('speed').value));
		};
		state.playing = setTimeout(step, 0);
	}
	function stop() {
		clearTimeout(state.playing);
		state.playing = null;
		$('play').textContent = '\u25b6 play back';
		drawStatic();
	}

	function select(b0, b1) {
		state.b0 = Math.max(0, Math.min(b0, NB - 1));
		state.b1 = Math.max(state.b0, Math.min(b1, NB - 1));
		recompute();
		drawStatic();
		drawCharts();
		summary();
		if (state.cell >= 0) history(state.cell);
	}
	$('reset').addEventListener('click', () => select(0, NB - 1));
	$('play').addEventListener('click', play);
	for (const r of document.querySelectorAll('input[name=metric]'))
		r.addEventListener('change', () => { state.metric = r.value; drawStatic(); });
	if (!M.accessed_available) $('metric-accessed').disabled = true;

	// ---- titles ----
	document.title = `hvmtrace: VM '${M.vm || 'unnamed'}' (${M.trace})`;
	$('title').textContent = `VM '${M.vm || 'unnamed'}' · mode ${M.mode} · ${M.interval_ns / 1e9} s intervals`;
	$('subtitle').textContent = `${M.trace} · ${M.vmm}, ${M.accel} · ${N} intervals · GFN ${hex(M.gfn_first)}–${hex(M.gfn_end - 1)}` +
		(M.accessed_available ? '' : ` · accessed pages not available (mode ${M.mode})`);
	$('grid-what').textContent = `(${W} cells wide, a cell = ${CP === 1 ? 'one page' : CP + ' pages (' + CP * PS / 1024 + ' KiB)'}, ` +
		`low addresses top left, row by row${B > 1 ? `; time in blocks of ${B} intervals` : ''}; grey: no RAM` +
		(SEGS.length > 1 ? `; left out, no RAM: ${SEGS.slice(1).map((s, i) => `GFN ${hex(SEGS[i][1])}–${hex(s[0] - 1)}`).join(', ')})` : ')');
	if (M.incomplete) $('warning').textContent = 'This trace is incomplete: it shows the intervals before the damage.';
	if (M.bandwidth === 'none') $('bw-box').hidden = true;
	else $('bw-title').textContent = `DRAM bandwidth (${M.bandwidth_source}${M.bandwidth === 'total' ? ', reads + writes' : ''})`;
	const lg = $('legend-bar').getContext('2d');
	for (let x = 0; x < 200; x++) {
		const t = 0.12 + 0.88 * Math.sqrt(x / 199);
		lg.fillStyle = `rgb(${WRITTEN.map((v) => Math.round(255 * (1 - t) + v * t)).join(',')})`;
		lg.fillRect(x, 0, 1, 12);
	}
	select(0, NB - 1);
	document.body.dataset.ready = '1';
})().catch((e) => {
	document.body.dataset.error = String(e);
	document.getElementById('warning').textContent = 'The report could not be drawn: ' + e;
});

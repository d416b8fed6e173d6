// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format/outfile.h"
#include "format/svg.h"

/* Shared by every picture; static renderers (no script) read it too. */
static const char style[] =
	"text{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:11px;fill:#000}"
	"text.h1{font-size:17px;font-weight:bold}text.h2{font-size:13px;font-weight:bold}"
	"text.sm{font-size:10px;fill:#333}text.btn{fill:#1a4fa0;cursor:pointer;font-weight:bold}"
	".fr{cursor:pointer}.fr text{pointer-events:none}.fr:hover rect{stroke:#000;stroke-width:1}"
	".anc rect{opacity:.55}.c:hover{stroke:#000;stroke-width:1}";

/*
 * Zoom (click a frame; "Reset zoom"), search (a regular expression, from the
 * "Search" button or the address: file.svg?s=NAME or #s=NAME) that paints the
 * matching frames and shows their share of the samples, and the hovered
 * frame's details. Frames are read from the document itself: each frame is a
 * <g class="fr" data-n="SAMPLES"> with a <title> whose first line is its name.
 */
static const char script[] =
	"(function(){'use strict';\n"
	"var NS='http://www.w3.org/2000/svg',fl=document.getElementById('flame');\n"
	"if(!fl)return;\n"
	"var X0=+fl.getAttribute('data-x0'),W=+fl.getAttribute('data-w'),CW=+fl.getAttribute('data-cw'),\n"
	" HL=fl.getAttribute('data-hl'),fr=[],gs=fl.getElementsByClassName('fr'),i,\n"
	" $=function(id){return document.getElementById(id);},unz=$('unzoom'),clr=$('clear'),\n"
	" mt=$('matched'),det=$('details'),term='';\n"
	"for(i=0;i<gs.length;i++){var g=gs[i],r=g.getElementsByTagName('rect')[0],\n"
	" t=g.getElementsByTagName('title')[0].textContent;\n"
	" fr.push({g:g,r:r,t:g.getElementsByTagName('text')[0],x:+r.getAttribute('x'),\n"
	"  w:+r.getAttribute('width'),y:+r.getAttribute('y'),name:t.split('\\n')[0],\n"
	"  info:t.replace(/\\n/g,'  '),fill:r.getAttribute('fill')});g.fi=fr.length-1;}\n"
	"function label(f,x,w){var m=Math.floor((w-6)/CW),s=m<3?'':f.name.length<=m?f.name:\n"
	" f.name.substr(0,m-2)+'..';\n"
	" if(!f.t){if(!s)return;f.t=document.createElementNS(NS,'text');\n"
	"  f.t.setAttribute('y',f.y+11);f.g.appendChild(f.t);}\n"
	" f.t.setAttribute('x',(x+3).toFixed(2));f.t.textContent=s;}\n"
	"function place(f,x,w){f.r.setAttribute('x',x.toFixed(2));f.r.setAttribute('width',w.toFixed(2));\n"
	" label(f,x,w);}\n"
	"function zoom(z){var k=W/z.w,e=1e-6;fr.forEach(function(f){var show;\n"
	" if(f.y>z.y){show=f.x<=z.x+e&&f.x+f.w>=z.x+z.w-e;f.g.classList.toggle('anc',show);\n"
	"  if(show)place(f,X0,W);}\n"
	" else{show=f.x>=z.x-e&&f.x+f.w<=z.x+z.w+e;f.g.classList.remove('anc');\n"
	"  if(show)place(f,X0+(f.x-z.x)*k,f.w*k);}\n"
	" f.g.style.display=show?'':'none';});unz.style.display='';}\n"
	"function unzoom(){fr.forEach(function(f){f.g.style.display='';f.g.classList.remove('anc');\n"
	" place(f,f.x,f.w);});unz.style.display='none';}\n"
	"function search(s){var re=null,hits=[],sum=0,end=-1;term=s||'';\n"
	" try{re=new RegExp(term);}catch(e){}\n"
	" fr.forEach(function(f){var m=term!==''&&(re?re.test(f.name):f.name.indexOf(term)>=0);\n"
	"  f.r.setAttribute('fill',m?HL:f.fill);f.g.classList.toggle('hit',m);if(m)hits.push([f.x,f.x+f.w]);});\n"
	" hits.sort(function(a,b){return a[0]-b[0];});\n"
	" hits.forEach(function(h){if(h[1]>end){sum+=h[1]-Math.max(h[0],end);end=h[1];}});\n"
	" mt.textContent=term?'Matched: '+term+' '+(100*sum/W).toFixed(2)+'% of samples':'';\n"
	" clr.style.display=term?'':'none';}\n"
	"fl.addEventListener('click',function(ev){var g=ev.target.closest('.fr');if(g)zoom(fr[g.fi]);});\n"
	"fl.addEventListener('mouseover',function(ev){var g=ev.target.closest('.fr');\n"
	" det.textContent=g?fr[g.fi].info:'';});\n"
	"unz.addEventListener('click',unzoom);clr.addEventListener('click',function(){search('');});\n"
	"$('search').addEventListener('click',function(){var s=prompt('Search frames (regular expression):',term);\n"
	" if(s!==null)search(s);});\n"
	"var q=/[?#&]s(?:earch)?=([^&#]*)/.exec(location.href);\n"
	"if(q)search(decodeURIComponent(q[1].replace(/\\+/g,' ')));\n"
	"})();\n";

int svg_init(struct svg *s)
{
	memset(s, 0, sizeof(*s));
	s->body = open_memstream(&s->buf, &s->len);
	return s->body ? 0 : -ENOMEM;
}

/* The code point of the UTF-8 sequence at p (n bytes left) and its length; -1 if invalid. */
static long utf8_next(const unsigned char *p, size_t n, int *len)
{
	long c = p[0];
	int k, need = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
	static const long min[] = { 0, 0x80, 0x800, 0x10000 };

	*len = 1;
	if (need <= 0)
		return need ? -1 : c;
	if ((size_t)need >= n)
		return -1;  /* cut short */
	c &= 0x7f >> need;
	for (k = 1; k <= need; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return -1;
		c = c << 6 | (p[k] & 0x3f);
	}
	*len = need + 1;
	return c < min[need] ? -1 : c;
}

/* XML 1.0's Char production: what a document may hold at all. */
static int xml_char(long c)
{
	return c == 0x9 || c == 0xa || c == 0xd || (c >= 0x20 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) ||
	       (c >= 0x10000 && c <= 0x10ffff);
}

/* What character c (len bytes at p) becomes in the document. */
static const char *escaped(long c, const unsigned char *p, int len, char *buf)
{
	switch (c) {
	case '&': return "&amp;";
	case '<': return "&lt;";
	case '>': return "&gt;";
	case '"': return "&quot;";
	case '\'': return "&#39;";
	}
	/* A control character (C0, DEL, C1) or bytes that are no UTF-8: never an escape, never an invalid document. */
	if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || !xml_char(c))
		return "?";
	memcpy(buf, p, len);
	buf[len] = 0;
	return buf;
}

void svg_escape(FILE *f, const char *text)
{
	const unsigned char *p = (const unsigned char *)text;
	size_t n = strlen(text), i = 0, out = 0, k;
	const char *e;
	char buf[8];
	long c;
	int len;

	while (i < n) {
		c = utf8_next(p + i, n - i, &len);
		e = escaped(c, p + i, len, buf);
		k = strlen(e);
		if (out + k > SVG_MAX_TEXT) {
			fputs("...", f);
			return;
		}
		fputs(e, f);
		out += k;
		i += len;
	}
}

static double hue_part(double p, double q, double t)
{
	t = t < 0 ? t + 1 : t > 1 ? t - 1 : t;
	if (t < 1.0 / 6)
		return p + (q - p) * 6 * t;
	if (t < 0.5)
		return q;
	if (t < 2.0 / 3)
		return p + (q - p) * (2.0 / 3 - t) * 6;
	return p;
}

const char *svg_hsl(double h, double s, double l, char *buf)
{
	double q = l < 0.5 ? l * (1 + s) : l + s - l * s, p = 2 * l - q;

	h = fmod(h, 360) / 360;
	snprintf(buf, 8, "#%02x%02x%02x", (int)lround(255 * hue_part(p, q, h + 1.0 / 3)),
		 (int)lround(255 * hue_part(p, q, h)), (int)lround(255 * hue_part(p, q, h - 1.0 / 3)));
	return buf;
}

int svg_write(struct svg *s, const char *path, const char *title)
{
	char *doc = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (fclose(s->body))
		return -errno;
	s->body = NULL;
	f = open_memstream(&doc, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%.0f\" "
		   "viewBox=\"0 0 %d %.0f\">\n<title>", SVG_WIDTH, s->height, SVG_WIDTH, s->height);
	svg_escape(f, title);
	fprintf(f, "</title>\n<style>%s</style>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
		style);
	fwrite(s->buf, 1, s->len, f);
	fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n", script);
	err = fclose(f) ? -ENOMEM : 0;
	if (!err)
		err = write_file_atomic(path, doc, len);
	free(doc);
	return err;
}

void svg_free(struct svg *s)
{
	if (s->body)
		fclose(s->body);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

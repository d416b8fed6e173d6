// SPDX-License-Identifier: GPL-2.0
/* Long names fitted to table columns (issue 25): the end kept, never two rows alike. */
#include <stdio.h>
#include <string.h>

#include "base/fit.h"
#include "unit.h"

#define CXX "acme_enterprise_platform::request_processing_pipeline::HttpConnectionHandler::handle_incoming_request"
#define GO "github.com/prometheus/prometheus/scrape.(*scrapeLoop).scrapeAndReport"

static void short_names_whole(void)
{
	char buf[64];

	CHECK(!strcmp(fit_name("main", 28, buf, sizeof(buf)), "main"));
	CHECK(!strcmp(fit_name("app::f(int)", 28, buf, sizeof(buf)), "app::f(int)"));
}

static void keeps_the_function(void)
{
	char buf[64];

	CHECK(!strcmp(fit_name(CXX, 28, buf, sizeof(buf)), "a..::handle_incoming_request"));
	CHECK(!strcmp(fit_name(CXX "(unsigned long)", 28, buf, sizeof(buf)), "a..::handle_incoming_request"));
	CHECK(fit_cells(fit_name(GO, 40, buf, sizeof(buf))) == 40);
	CHECK(strstr(buf, ".scrapeAndReport") && !strncmp(buf, "github.com/", 11));
	/* A last component longer than the column: its end, the start of the name, the marker. */
	CHECK(fit_cells(fit_name("ns::an_extremely_long_function_name_indeed_yes", 20, buf, sizeof(buf))) == 20);
	CHECK(!strcmp(buf, "n..n_name_indeed_yes"));
	/* Go's receiver is not a parameter list. */
	CHECK(!strcmp(fit_name("main.(*T).m", 28, buf, sizeof(buf)), "main.(*T).m"));
}

static void utf8_counted_in_cells(void)
{
	char buf[64];

	/* 30 characters, 32 bytes: fitted by characters, never cut inside one. */
	fit_name("caf\xc3\xa9_caf\xc3\xa9_aaaaaaaaaaaaaaaaaaaa::g", 12, buf, sizeof(buf));
	CHECK(fit_cells(buf) == 12);
	CHECK(!strcmp(fit_name("caf\xc3\xa9::f", 28, buf, sizeof(buf)), "caf\xc3\xa9::f"));
}

static void column_never_shows_two_alike(void)
{
	const char *names[] = { CXX, "acme_enterprise_platform::response_processing_pipeline::"
				     "HttpConnectionHandler::handle_incoming_request", "main" };
	char a[256], b[256];
	size_t w;
	FILE *devnull = fopen("/dev/null", "w");

	CHECK(devnull);
	w = fit_column(devnull, names, 3, 28, 100);
	fclose(devnull);
	CHECK(w >= 28);
	fit_name(names[0], w, a, sizeof(a));
	fit_name(names[1], w, b, sizeof(b));
	CHECK(strcmp(a, b));
	/* Names that differ at the end keep the narrow column. */
	names[1] = "acme_enterprise_platform::request_processing_pipeline::HttpConnectionHandler::close";
	devnull = fopen("/dev/null", "w");
	w = fit_column(devnull, names, 3, 28, 100);
	fclose(devnull);
	CHECK(w == 28);
}

int main(void)
{
	RUN(short_names_whole);
	RUN(keeps_the_function);
	RUN(utf8_counted_in_cells);
	RUN(column_never_shows_two_alike);
	UNIT_EXIT();
}

/*
 * cli/cmd-start.c — `ltr start`: start a recording session held by a
 * recorder process that outlives the command.
 */
#include "cli/cli.h"
#include "cli/session.h"
#include "prim/prim.h"
#include "recorder/recorder.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] = "ltr start [--instance NAME] [--filemode [-o FILE]] [--buffer-size KB]\n"
                            "                 [--buffers N|N%] [--max-file-size MB] [--provider SPEC]...";

static void help(void)
{
    printf("usage: %s\n\n"
           "Starts a recording session. A recorder process holds its buffers in shared\n"
           "memory until 'ltr stop' or 'ltr cancel'; programs that use the ltr provider\n"
           "API write their events into it.\n\n"
           "  --instance NAME      session name (default: ltr); several sessions may run\n"
           "  --filemode           write full buffers to the trace as they fill; without it\n"
           "                       the session is a flight recorder (memory mode) that keeps\n"
           "                       the newest buffers until 'ltr save' or 'ltr stop'\n"
           "  -o, --output FILE    file mode: the trace grows here until 'ltr stop' moves it\n"
           "                       (default: $TMPDIR/ltr-NAME.ltr.part)\n"
           "  --buffer-size KB     size of each buffer, %u to %u (default %u)\n"
           "  --buffers N|N%%       number of buffers, %u to %u, or a percentage of RAM\n"
           "                       (default %u)\n"
           "  --max-file-size MB   file mode: stop growing the trace at this size; later\n"
           "                       buffers are counted as lost\n"
           "  --provider SPEC      enable a provider: NAME|GUID[:KEYWORDS[:LEVEL]], keywords\n"
           "                       as a hex mask (default all), level 1 critical .. 5 verbose\n"
           "                       (default 5); may be repeated\n",
           usage, LTR_BUFFER_KB_MIN, LTR_BUFFER_KB_MAX, LTR_BUFFER_KB_DEFAULT, LTR_BUFFERS_MIN,
           LTR_BUFFERS_MAX, LTR_BUFFERS_DEFAULT);
}

static int parse_buffers(const char *text, uint32_t buffer_kb, uint32_t *out)
{
    size_t n = strlen(text);
    uint64_t v;
    if (n && text[n - 1] == '%') {
        char num[32];
        snprintf(num, sizeof num, "%.*s", (int)(n - 1), text);
        if (cli_parse_u64("start", "--buffers (percentage of RAM)", num, 1, 50, &v))
            return -1;
        uint64_t count = ltr_total_ram() / 100 * v / ((uint64_t)buffer_kb * 1024);
        if (count < LTR_BUFFERS_MIN || count > LTR_BUFFERS_MAX) {
            cli_fail("start", "--buffers %s gives %llu buffers of %u KB: allowed %u to %u", text,
                     (unsigned long long)count, buffer_kb, LTR_BUFFERS_MIN, LTR_BUFFERS_MAX);
            return -1;
        }
        *out = (uint32_t)count;
        return 0;
    }
    if (cli_parse_u64("start", "--buffers", text, LTR_BUFFERS_MIN, LTR_BUFFERS_MAX, &v))
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static void default_output(ltr_session_config *cfg)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(cfg->output, sizeof cfg->output, "%s/ltr-%s-%u.ltr.part", tmp && *tmp ? tmp : "/tmp",
             cfg->name, (unsigned)getuid());
}

int cmd_start(int argc, char **argv)
{
    static const struct option opts[] = {
        {"instance", required_argument, 0, 'n'}, {"filemode", no_argument, 0, 'f'},
        {"output", required_argument, 0, 'o'},   {"buffer-size", required_argument, 0, 's'},
        {"buffers", required_argument, 0, 'b'},  {"max-file-size", required_argument, 0, 'm'},
        {"provider", required_argument, 0, 'p'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    static ltr_session_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.name, sizeof cfg.name, "%s", LTR_DEFAULT_SESSION);
    cfg.ncollectors = 1;
    snprintf(cfg.collectors[0].name, sizeof cfg.collectors[0].name, "events");
    cfg.collectors[0].buffer_kb = LTR_BUFFER_KB_DEFAULT;
    const char *buffers = NULL, *output = NULL;
    uint64_t v;
    ltr_error err;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (ltr_session_name_check(optarg, &err))
                return cli_fail("start", "%s", err.msg);
            snprintf(cfg.name, sizeof cfg.name, "%s", optarg);
            break;
        case 'f': cfg.mode = LTR_MODE_FILE; break;
        case 'o': output = optarg; break;
        case 's':
            if (cli_parse_u64("start", "--buffer-size (KB)", optarg, LTR_BUFFER_KB_MIN, LTR_BUFFER_KB_MAX, &v))
                return 2;
            cfg.collectors[0].buffer_kb = (uint32_t)v;
            break;
        case 'b': buffers = optarg; break;
        case 'm':
            if (cli_parse_u64("start", "--max-file-size (MB)", optarg, 1, 1ull << 40, &v))
                return 2;
            cfg.max_file_size = v << 20;
            break;
        case 'p':
            if (cfg.nproviders == LTR_MAX_SESSION_PROVIDERS)
                return cli_fail("start", "at most %d providers per session", LTR_MAX_SESSION_PROVIDERS);
            if (ltr_provider_spec_parse(optarg, &cfg.providers[cfg.nproviders], &err))
                return cli_fail("start", "%s", err.msg), 2;
            cfg.nproviders++;
            break;
        case 'h': help(); return 0;
        default: return cli_usage_error("start", usage);
        }
    }
    if (optind < argc)
        return cli_fail("start", "unexpected argument '%s' (recording profiles are not supported yet)",
                        argv[optind]), 2;
    cfg.collectors[0].buffers = LTR_BUFFERS_DEFAULT;
    if (buffers && parse_buffers(buffers, cfg.collectors[0].buffer_kb, &cfg.collectors[0].buffers))
        return 2;
    if (cfg.mode != LTR_MODE_FILE && (output || cfg.max_file_size))
        return cli_fail("start", "%s is for file mode: add --filemode",
                        output ? "--output" : "--max-file-size"), 2;
    if (cfg.mode == LTR_MODE_FILE) {
        if (output && cli_absolute_path("start", output, cfg.output, sizeof cfg.output))
            return 2;
        if (!output)
            default_output(&cfg);
    }
    if (ltr_recorder_launch(&cfg, &err))
        return cli_fail("start", "%s", err.msg);
    printf("session '%s' started: %s mode, %u buffers of %u KB", cfg.name,
           cfg.mode == LTR_MODE_FILE ? "file" : "memory", cfg.collectors[0].buffers,
           cfg.collectors[0].buffer_kb);
    if (cfg.mode == LTR_MODE_FILE)
        printf(", writing %s", cfg.output);
    printf("\n");
    return 0;
}

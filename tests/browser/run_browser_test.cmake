# Browser test of `fprof report` (see CMakeLists.txt). Artefacts, the screenshots included, stay in
# WORK (build/tests/browser-artifacts). -DFPROF=... -DFIXTURE=... -DCHROMIUM=... -DWORK=dir
if(NOT CHROMIUM OR NOT EXISTS "${CHROMIUM}")
  message(FATAL_ERROR "no chromium found: run scripts/install-deps (make test does) or apt-get install chromium")
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(failures "")
# check("<if() condition>" "what it means"): the condition is parsed as code, so it may name variables.
macro(check condition message)
  cmake_language(EVAL CODE "if(${condition})\n set(check_ok ON)\nelse()\n set(check_ok OFF)\nendif()")
  if(NOT check_ok)
    list(APPEND failures "${message}")
    message("FAIL ${message}")
  else()
    message("ok   ${message}")
  endif()
endmacro()

function(run)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN}: exit ${rc}\n${out}\n${err}")
  endif()
endfunction()

foreach(kind trace counters hostile baseline)
  run("${FIXTURE}" ${kind} ${kind}.fprof)
endforeach()
run("${FPROF}" report counters.fprof --baseline baseline.fprof -o counters.html)
run("${FPROF}" report hostile.fprof -o hostile.html)
run("${FPROF}" report trace.fprof -o trace.html)

# Network off: a private network namespace where the test runs as root (CI), else a dead proxy.
# The report's Content-Security-Policy forbids fetches anyway; this makes sure nothing was needed.
set(netns "")
execute_process(COMMAND unshare -n true RESULT_VARIABLE unshare_rc OUTPUT_QUIET ERROR_QUIET)
if(unshare_rc EQUAL 0)
  set(netns unshare -n)
endif()
set(flags --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --no-first-run --disable-extensions
          --proxy-server=127.0.0.1:9 --proxy-bypass-list=<-loopback> --user-data-dir=${WORK}/profile)

# Loads a page and returns its DOM after the page's own script ran.
function(dump_dom page out_var)
  execute_process(COMMAND ${netns} "${CHROMIUM}" ${flags} --dump-dom "file://${WORK}/${page}"
                  WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE dom ERROR_VARIABLE err TIMEOUT 60)
  if(NOT rc EQUAL 0 OR dom STREQUAL "")
    message(FATAL_ERROR "chromium --dump-dom ${page}: exit ${rc}\n${err}")
  endif()
  string(REGEX REPLACE "[#?].*" "" name "${page}")
  file(WRITE "${WORK}/${name}.dom.html" "${dom}")
  set(${out_var} "${dom}" PARENT_SCOPE)
endfunction()

function(count_matches regex text out_var)
  string(REGEX MATCHALL "${regex}" hits "${text}")
  list(LENGTH hits n)
  set(${out_var} ${n} PARENT_SCOPE)
endfunction()

# 1. A run with counters and a baseline, with the page's self-test (#selftest): it sorts and
#    filters the kernel table and checks the fusion order in the page, and writes its verdict.
dump_dom("counters.html#selftest" dom)
string(REGEX MATCH "<html[^>]*>" html_tag "${dom}")
string(FIND "${html_tag}" "data-fprof-script=\"ran\"" at)
check("NOT at EQUAL -1" "the report's own script ran")
string(REGEX MATCH "<pre id=\"fprof-selftest\">([^<]*)</pre>" _ "${dom}")
set(verdict "${CMAKE_MATCH_1}")
message("self-test verdict:\n${verdict}")
string(REGEX MATCH "^PASS [0-9]+ checks" passed "${verdict}")
check("passed" "in-page self-test passed (table sorts by time, calls, mean, intensity, % of roof, name; filter; fusion order)")
count_matches("<circle class=\"pt\"" "${dom}" points)
check("points EQUAL 9" "roofline has one point per kernel group with FLOPs and bytes: 9 (got ${points})")
count_matches("<tr id=\"g[0-9]+\"" "${dom}" rows)
check("rows EQUAL 10" "kernel table lists the 10 kernel groups (got ${rows})")
count_matches("<line class=\"arrow\"" "${dom}" arrows)
check("arrows EQUAL 1" "one before->after arrow: the only group that moved (got ${arrows})")
string(REGEX MATCHALL "<td class=\"mono pair\">[^<]*</td>" pairs "${dom}")
string(REGEX REPLACE "<td class=\"mono pair\">([^<]*)</td>" "\\1" pairs "${pairs}")
string(JOIN "," pairs ${pairs})
check("pairs STREQUAL matmul_bias_relu,residual_layernorm,attention"
      "fusion table lists the reference pairs in payoff order, the one not to fuse last (got ${pairs})")
string(REGEX MATCHALL "<tr class=\"fuse\" data-payoff=\"[^\"]*\"" payoffs "${dom}")
string(REGEX REPLACE "<tr class=\"fuse\" data-payoff=\"([^\"]*)\"" "\\1" payoffs "${payoffs}")
list(GET payoffs 0 first_payoff)
list(GET payoffs 1 second_payoff)
check("first_payoff GREATER second_payoff" "payoffs decrease: ${payoffs}")
string(FIND "${dom}" "id=\"gate-verdict\">gate: FAIL<" at)
check("NOT at EQUAL -1" "gate verdict against the baseline shown (FAIL: the epilogue got 25% slower)")

# 2. A trace-only run: no fake points, and the chart says how to get them.
dump_dom("trace.html" dom)
count_matches("<circle class=\"pt\"" "${dom}" points)
check("points EQUAL 0" "trace-mode report draws no points (got ${points})")
string(FIND "${dom}" "id=\"roofline-none\"" at1)
string(FIND "${dom}" "fprof run --metrics roofline" at2)
check("NOT at1 EQUAL -1 AND NOT at2 EQUAL -1" "trace-mode report says why there is no roofline")

# 3. Hostile kernel names: each would set data-injected on <html> if it ran as markup or script.
dump_dom("hostile.html#selftest" dom)
string(REGEX MATCH "<html[^>]*>" html_tag "${dom}")
string(FIND "${html_tag}" "data-fprof-script=\"ran\"" at1)
string(FIND "${html_tag}" "data-injected" at2)
check("NOT at1 EQUAL -1" "hostile report: the report's own script ran")
check("at2 EQUAL -1" "hostile report: no injected script or handler ran (${html_tag})")
count_matches("<script" "${dom}" scripts)
check("scripts EQUAL 2" "hostile report: only the report's two script elements exist (got ${scripts})")
count_matches("<img" "${dom}" imgs)
check("imgs EQUAL 0" "hostile report: a kernel named <img onerror=...> is text, not an element")
string(FIND "${dom}" "&lt;script&gt;alert(1)&lt;/script&gt;" at)
check("NOT at EQUAL -1" "hostile report: <script>alert(1)</script> is shown as text")
string(REGEX MATCH "<pre id=\"fprof-selftest\">([^<]*)</pre>" _ "${dom}")
string(REGEX MATCH "^PASS" passed "${CMAKE_MATCH_1}")
check("passed" "hostile report: self-test passed")

# 4. Screenshots, kept as artefacts.
foreach(page counters hostile)
  execute_process(COMMAND ${netns} "${CHROMIUM}" ${flags} --window-size=1400,2200 --screenshot=${WORK}/${page}.png
                          "file://${WORK}/${page}.html"
                  WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET TIMEOUT 60)
  set(png_size 0)
  if(EXISTS "${WORK}/${page}.png")
    file(SIZE "${WORK}/${page}.png" png_size)
  endif()
  check("rc EQUAL 0 AND png_size GREATER 20000" "screenshot ${WORK}/${page}.png written (${png_size} bytes)")
endforeach()

list(LENGTH failures nfail)
if(nfail GREATER 0)
  message(FATAL_ERROR "${nfail} browser checks failed (artefacts in ${WORK})")
endif()
message("all browser checks passed; artefacts in ${WORK}")

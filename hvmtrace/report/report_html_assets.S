/* SPDX-License-Identifier: MIT */
/* The HTML report's page and script, built into the program so that `report --html` needs no files. */
	.section .rodata
	.global hvt_report_page, hvt_report_page_end, hvt_report_view, hvt_report_view_end
hvt_report_page:
	.incbin "hvmtrace/report/report_page.html"
hvt_report_page_end:
hvt_report_view:
	.incbin "hvmtrace/report/report_view.js"
hvt_report_view_end:
	.section .note.GNU-stack,"",@progbits

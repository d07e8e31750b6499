/* main.c: the tunerd executable; all logic lives in tunerdcore (cli.c) so
 * the unit tests link exactly what ships. */
#include "cli.h"

int main(int argc, char **argv)
{
    return vt_cli_main(argc, argv);
}

#!/bin/bash
#PBS-N gluedmagic
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1

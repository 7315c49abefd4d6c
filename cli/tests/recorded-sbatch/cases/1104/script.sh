#!/bin/bash
#PBS pbsname
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
